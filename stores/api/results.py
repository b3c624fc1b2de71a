"""Typed results of the Python API. Each has `.to_dict()` (JSON-ready
values) and `.to_json()` (that dict as a JSON string); `.as_json()` is
the older name of `.to_dict()` and stays for callers that use it.

Result types that belong to one concept live beside it and take `Result`
as their base (CompactResult in stores/context, SweepReport in
stores/sweep, …); the ones here are the command results that had no type."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Iterator

import orjson


class Result:
    """The base of every API result."""

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_NON_STR_KEYS, default=str).decode()

    def as_json(self) -> dict:
        return self.to_dict()


class Listing(Result):
    """A result that is a list of things (`items` names the field): len() and
    iteration go over them."""
    items = ""

    def __len__(self) -> int:
        return len(getattr(self, self.items))

    def __iter__(self):
        return iter(getattr(self, self.items))


@dataclass
class RecallResult(Listing):
    """Hits for one query, best first; `vector_lag` counts events the
    vector index had not reached (their vector score is missing)."""
    items = "hits"
    query: str
    hits: list = field(default_factory=list)            # stores.recall.Hit
    vector_lag: int = 0
    warnings: list[str] = field(default_factory=list)   # a filter that cannot match, a mode that fell back
    asked: object = field(default=None, repr=False)      # the stores.recall.RecallQuery answered (session resolved)

    def hit_dicts(self) -> list[dict]:
        """One dict per hit: what `trace recall` prints, one JSON line each."""
        lag = {"vector_lag": self.vector_lag} if self.vector_lag else {}
        return [{**h.as_json(), **lag} for h in self.hits]

    def block(self, budget: int) -> str:
        """The hits as a <recalled-context> block of at most `budget` tokens."""
        from reducers.recall_block import build_block
        return build_block([h.as_json() for h in self.hits], budget)

    def to_dict(self) -> dict:
        return {"query": self.query, "hits": self.hit_dicts(), "vector_lag": self.vector_lag,
                "warnings": self.warnings}


@dataclass
class ShowResult(Listing):
    """Events exactly as logged (with `full`, artifact previews replaced by
    the original text and attachments carried). `original` is set when one
    event with an artifact was asked for with `original=True`: an iterator
    over its bytes, as they were."""
    items = "events"
    events: list[dict] = field(default_factory=list)
    original: Iterator[bytes] | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {"events": self.events}


@dataclass
class ExportResult(Result):
    """The log (or one session) as `trace`-format events. `events` is read
    lazily, once: iterate it to stream a big store; `to_dict()` reads it
    all into memory."""
    session_id: str | None
    events: Iterator[dict] = field(default_factory=lambda: iter(()), repr=False)

    def __iter__(self):
        return iter(self.events)

    def to_dict(self) -> dict:
        return {"session_id": self.session_id, "events": list(self.events)}


@dataclass
class SessionList(Listing):
    """Sessions, newest first (stores.sessions.SessionInfo each)."""
    items = "sessions"
    sessions: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"sessions": [s.to_dict() for s in self.sessions]}


@dataclass
class Note(Result):
    id: str
    seq: int
    session_id: str
    ts: str | None
    category: str
    text: str


@dataclass
class NoteList(Listing):
    """Notes, newest first."""
    items = "notes"
    notes: list[Note] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"notes": [n.to_dict() for n in self.notes]}


@dataclass
class WorkingStateResult(Result):
    """A session's latest working state: `state` holds its fields (None for
    a task_state another tool wrote), `text` the rendering the pack carries."""
    session_id: str
    seq: int
    ts: str | None
    state: dict | None
    text: str


@dataclass
class ReplayResult(Result):
    """A session's model calls, one anatomy row each (`calls`), or, for one
    call asked by number, that call rebuilt (`turn`)."""
    session_id: str
    calls: list[dict] = field(default_factory=list)
    turn: dict | None = None

    def to_dict(self) -> dict:
        return {"session_id": self.session_id, "turn": self.turn} if self.turn is not None else \
            {"session_id": self.session_id, "calls": self.calls}


def from_dict(cls, data: dict[str, Any]):
    """A result from a dict that may carry more keys than the type has."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})
