"""A JSON value's kind as JSON names it ("string", "number", "object"...),
for errors that say what a user's file holds where something else belongs."""
from __future__ import annotations

from typing import Any

_KINDS = {str: "string", bool: "boolean", int: "number", float: "number", type(None): "null", dict: "object",
          list: "array"}


def json_kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)


def a_json_kind(value: Any) -> str:
    """The kind with its article, as a sentence says it: "a string", "an object", "null"."""
    kind = json_kind(value)
    return kind if kind == "null" else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
