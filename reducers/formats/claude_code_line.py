"""What every draft of one Claude Code line shares (`Line`), the draft
made from it, and the digests that identify a line and a call's input:
used by the parser (claude_code.py) and by its readers of the other line
types (claude_code_side_lines.py)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from reducers.drafts import Draft
from reducers.formats.common import compact_json

PREFIX = "cc"


@dataclass(slots=True)
class Line:
    """What every draft of one source line shares."""
    session_id: str
    rid: str                    # record identity inside keys: the uuid, or uuid@line when missing/reused
    line: int
    uuid: str | None
    ts: str | None
    meta: dict                  # sidechain / agent_id flags
    sidechain: bool
    turn: str
    content: str = ""           # "~<digest>" in keys of a line named by its uuid alone


def draft(at: Line, kind: str, text: str, part: int | str, *, meta: dict | None = None, **kw) -> Draft:
    info = {**at.meta, **(meta or {})}
    return Draft(kind=kind, text=text, session_id=at.session_id,
                 key=f"{PREFIX}/{at.session_id}/{at.rid}{at.content}/{part}",
                 turn_id=at.turn, ts=at.ts, line=at.line, uuid=at.uuid, meta=info or None, **kw)


def input_digest(value: Any) -> int:
    """A tool call's input, hashed: a call seen again with the same input is a repeat."""
    try:
        return hash(orjson.dumps(value))
    except TypeError:                      # an integer beyond 64 bits, a lone surrogate
        return hash(compact_json(value))


def line_digest(rec: dict) -> str:
    """A stable digest of what a line says: its message (the same in a
    main file's agent_progress relay and the sub-agent's own file, whatever
    the metadata around it), else the whole line. Keys carry it, and a line
    that repeats an earlier one with its uuid is found by it."""
    said = rec.get("message")
    said = said if isinstance(said, dict) else rec
    try:
        raw = orjson.dumps(said)
    except TypeError:                      # an integer beyond 64 bits, a lone surrogate
        raw = compact_json(said).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=5).hexdigest()
