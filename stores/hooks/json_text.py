"""Editing a JSON settings file as text, so what we do not touch keeps its
bytes: members and array items are added or removed at their spans, in
the file's own indentation, and nothing else is re-serialised (a parse
and dump would re-space, re-escape and re-number the user's settings).

`JsonText(text)` validates first (an invalid file is refused naming its
line); every edit returns a new JsonText, re-scanned."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stores.errors import TraceError


@dataclass
class Node:
    start: int
    end: int                                   # one past the value's last character
    kind: str                                  # object | array | scalar
    members: list[tuple[str, "Node", int]] = field(default_factory=list)   # (key, value, key start) for objects
    items: list["Node"] = field(default_factory=list)                      # for arrays

    def get(self, key: str) -> "Node | None":
        """The member named `key`; of several, the last, which is the one
        every JSON reader (json.loads, the agents' JSON.parse) keeps."""
        for k, v, _ in reversed(self.members):
            if k == key:
                return v
        return None


class JsonText:
    def __init__(self, text: str, name: str = "settings"):
        self.text = text
        self.name = name
        try:
            self.value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise TraceError(f"{name}:{exc.lineno}: not valid JSON ({exc.msg}); fix the file or move it "
                             f"aside, then run the command again (nothing was written)") from None
        if not isinstance(self.value, dict):
            raise TraceError(f"{name}:1: the settings are not a JSON object; nothing was written")
        if not text.strip():
            self.text = "{}\n"
        self.newline = "\r\n" if "\r\n" in self.text else "\n"     # what we add follows the file's line endings
        self.root = _Scanner(self.text).value()

    # -- reading -------------------------------------------------------------------

    def line_of(self, node: Node) -> int:
        return self.text.count("\n", 0, node.start) + 1

    def node(self, *path: str | int) -> Node | None:
        node = self.root
        for step in path:
            if node is None:
                return None
            if isinstance(step, int):
                node = node.items[step] if node.kind == "array" and step < len(node.items) else None
            else:
                node = node.get(step) if node.kind == "object" else None
        return node

    # -- editing -------------------------------------------------------------------

    # New entries go first: inserted before the first one ("NEW,\n<indent>"),
    # they leave every existing line as it was (appending would add a comma
    # to the line before).

    def add_member(self, obj: Node, key: str, value: Any) -> "JsonText":
        """`key: value` as the object's first member."""
        indent, unit = self._indents(obj, [m[2] for m in obj.members])
        rendered = _render(value, unit, indent)
        entry = f"{json.dumps(key, ensure_ascii=False)}: {rendered}"
        if obj.members:
            first = obj.members[0][2]
            return self._replace(first, first, f"{entry},\n{indent}")
        outer = indent[:-len(unit)] if unit and indent.endswith(unit) else ""
        return self._replace(obj.start, obj.end, f"{{\n{indent}{entry}\n{outer}}}")

    def insert_item(self, arr: Node, value: Any) -> "JsonText":
        """`value` as the array's first item."""
        indent, unit = self._indents(arr, [i.start for i in arr.items])
        rendered = _render(value, unit, indent)
        if arr.items:
            first = arr.items[0].start
            return self._replace(first, first, f"{rendered},\n{indent}")
        outer = indent[:-len(unit)] if unit and indent.endswith(unit) else ""
        return self._replace(arr.start, arr.end, f"[\n{indent}{rendered}\n{outer}]")

    def remove_item(self, arr: Node, index: int) -> "JsonText":
        spans = [(i.start, i.end) for i in arr.items]
        return self._remove(arr, spans, index)

    def remove_member(self, obj: Node, key: str) -> "JsonText":
        spans = [(k_start, v.end) for _, v, k_start in obj.members]
        index = max(i for i, (k, _, _) in enumerate(obj.members) if k == key)     # the one `get` finds
        return self._remove(obj, spans, index)

    def _remove(self, container: Node, spans: list[tuple[int, int]], index: int) -> "JsonText":
        if len(spans) == 1:
            close = "}" if container.kind == "object" else "]"
            return self._replace(container.start, container.end, ("{" if close == "}" else "[") + close)
        start, end = spans[index]
        if index + 1 < len(spans):
            return self._replace(start, spans[index + 1][0], "")     # the item, its comma, the space after
        return self._replace(spans[index - 1][1], end, "")           # the comma before, the item

    def _replace(self, a: int, b: int, new: str) -> "JsonText":
        if self.newline != "\n":
            new = new.replace("\n", self.newline)
        return JsonText(self.text[:a] + new + self.text[b:], self.name)

    def _indents(self, container: Node, starts: list[int]) -> tuple[str, str]:
        """(indent of the container's entries, one indent unit)."""
        base = _line_indent(self.text, container.start)
        if starts:
            indent = _line_indent(self.text, starts[0])
            if self.text.rfind("\n", 0, starts[0]) > container.start:       # entries on lines of their own
                unit = indent[len(base):] if indent.startswith(base) and len(indent) > len(base) else "  "
                return indent, unit
        unit = _file_unit(self.text)
        return base + unit, unit


def _render(value: Any, unit: str, indent: str) -> str:
    return json.dumps(value, indent=unit or "  ", ensure_ascii=False).replace("\n", "\n" + indent)


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    i = line_start
    while i < len(text) and text[i] in " \t":
        i += 1
    return text[line_start:i]


def _file_unit(text: str) -> str:
    """The indentation step the file uses (two spaces when it shows none)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[:len(line) - len(stripped)]
    return "  "


class _Scanner:
    """Spans of a valid JSON text's values (validity was checked by json.loads)."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.decoder = json.JSONDecoder()

    def _space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def value(self) -> Node:
        self._space()
        start = self.pos
        ch = self.text[start]
        if ch == "{":
            node = Node(start, start, "object")
            self._entries("}", lambda: node.members.append(self._member()))
        elif ch == "[":
            node = Node(start, start, "array")
            self._entries("]", lambda: node.items.append(self.value()))
        else:
            _, self.pos = self.decoder.raw_decode(self.text, start)
            node = Node(start, start, "scalar")
        node.end = self.pos
        return node

    def _entries(self, close: str, read_one) -> None:
        """Read a container's entries up to and past its closing character."""
        self.pos += 1
        self._space()
        if self.text[self.pos] == close:
            self.pos += 1
            return
        while True:
            read_one()
            self._space()
            sep = self.text[self.pos]
            self.pos += 1
            if sep == close:
                return

    def _member(self) -> tuple[str, Node, int]:
        self._space()
        key_start = self.pos
        key, self.pos = self.decoder.raw_decode(self.text, self.pos)
        self._space()
        self.pos += 1                      # the colon
        return key, self.value(), key_start
