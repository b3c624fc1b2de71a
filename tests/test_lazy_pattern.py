"""A pattern compiled on first use answers as the compiled one does."""
from __future__ import annotations

import re

from reducers.lazy_pattern import LazyPattern


def test_a_lazy_pattern_is_not_compiled_until_used_and_then_answers_like_re():
    lazy = LazyPattern(r"[a-z]+(\d+)", re.I)
    assert "fullmatch" not in vars(lazy)                        # nothing compiled at definition
    plain = re.compile(r"[a-z]+(\d+)", re.I)
    for text in ("abc12", "ABC12", "12abc", "", "x1 y22"):
        assert bool(lazy.fullmatch(text)) == bool(plain.fullmatch(text))
        assert bool(lazy.match(text)) == bool(plain.match(text))
        assert lazy.findall(text) == plain.findall(text)
        assert lazy.sub("#", text) == plain.sub("#", text)
    assert "fullmatch" in vars(lazy) and lazy.pattern == plain.pattern and lazy.flags == plain.flags
