"""Checks every command's options get, wherever the option is declared,
applied to the built Click command so a new command cannot forget them:

- a number option holds a number the store can keep: Click's float ranges
  let nan through any bound (it compares false), inf would wait or run
  forever, and an integer past 64 bits passed every `min=` and then broke
  the JSON and SQLite writes behind it (`trace context --budget 10**20`
  printed the pack, then failed on its anatomy record);
- a `--session` names a session: an empty one matched every session as a
  prefix, exported the whole log, or made a session with no name.

Each refusal is Click's own usage error: one line, exit 2."""
from __future__ import annotations

import copy
import math

INT_LIMIT = 2**63 - 1                 # what SQLite and the JSON writers hold

_checked: dict[tuple[type, type], type] = {}


class _Finite:
    """Mixed in before a Click number type: its value, then these bounds."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!s} is not a finite number", param, ctx)
        if isinstance(number, int) and abs(number) > INT_LIMIT:
            self.fail(f"{value!s} is too large (at most {INT_LIMIT})", param, ctx)
        return number


class _NamedSession:
    """Mixed in before the string type of a `--session` option."""

    def convert(self, value, param, ctx):
        text = super().convert(value, param, ctx)
        if isinstance(text, str) and not text.strip():
            self.fail("is empty: name a session (`trace sessions` lists them)", param, ctx)
        return text


def _with(mixin: type, kind):
    """A copy of the param type `kind` whose convert runs `mixin`'s checks
    (a copy: click.INT and click.STRING are shared singletons)."""
    base = type(kind)
    if (mixin, base) not in _checked:
        _checked[(mixin, base)] = type(f"Checked{base.__name__}", (mixin, base), {})
    checked = copy.copy(kind)
    checked.__class__ = _checked[(mixin, base)]
    return checked


# `trace recall` checks its own options, the same way on its quick path
# (trace_cli/quick_recall.py) and through Click, with messages of its own.
SELF_CHECKED = ("recall",)


def check_params(command) -> None:
    """Apply the checks to every option of `command` and its sub-commands."""
    if command.name in SELF_CHECKED:
        return
    for param in getattr(command, "params", ()):
        kind = param.type
        if isinstance(kind, (_Finite, _NamedSession)):
            continue
        if getattr(kind, "_number_class", None) in (int, float):
            param.type = _with(_Finite, kind)
        elif param.name == "session" and kind.name in ("text", "str", "string"):
            param.type = _with(_NamedSession, kind)
    for sub in (getattr(command, "commands", None) or {}).values():
        check_params(sub)
