"""A regular expression compiled when it is first used.

A module that holds many patterns for rare cases (the credential tests
redaction applies only where a trigger word found a slot) would compile
them all at import, in every process: a cold `trace recall` redacts one
question and never needs them."""
from __future__ import annotations

import re

_METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub", "subn", "split", "pattern", "flags")


class LazyPattern:
    def __init__(self, pattern: str, flags: int = 0):
        self._args = (pattern, flags)

    def __getattr__(self, name: str):
        # Called only for what the instance lacks: on first use, compile and
        # keep the compiled pattern's methods on the instance (no cost after).
        compiled = re.compile(*self._args)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
