"""What every draft of one Claude Code line shares (`Line`), and the draft
made from it: used by the parser (claude_code.py) and by its readers of the
other line types (claude_code_side_lines.py)."""
from __future__ import annotations

from dataclasses import dataclass

from reducers.drafts import Draft

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
