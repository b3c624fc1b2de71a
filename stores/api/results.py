"""Typed results of the Python API. Each has `.to_dict()` (JSON-ready
values) and `.to_json()` (that dict as a JSON string); `.as_json()` is
the older name of `.to_dict()` and stays for callers that use it.

Result types that belong to one concept live beside it and take `Result`
(stores/api/result.py) as their base (CompactResult in stores/context,
SweepReport in stores/sweep, RecallResult in stores/api/recall_result.py,
…); the ones here are the command results that had no type."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterator

from stores.api.recall_result import RecallResult  # noqa: F401 - the API's results are all importable from here
from stores.api.result import Listing, Result


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


@dataclass
class FactList(Listing):
    """The facts the last sweep left, most important first (live ones
    unless asked for all). `swept` is False when no sweep has run yet,
    which is why the list would be empty."""
    items = "facts"
    facts: list[dict] = field(default_factory=list)
    swept: bool = True


@dataclass
class LedgerRows(Listing):
    """The ledger's decisions, oldest first; `swept` as in FactList."""
    items = "rows"
    rows: list[dict] = field(default_factory=list)
    swept: bool = True


@dataclass
class Reverted(Result):
    """The REVERT row `sweep revert` appended to the ledger."""
    row: dict

    def to_dict(self) -> dict:
        return self.row


@dataclass
class DiffResult(Result):
    """What entered and left a session's context between two calls: the
    `summary` (counts, cycles, tokens, slices) and each `changes` row."""
    summary: dict
    changes: list[dict] = field(default_factory=list)


def from_dict(cls, data: dict[str, Any]):
    """A result from a dict that may carry more keys than the type has."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class IndexResult(Result):
    """What `trace index` / `trace reindex` did: the watermarks of each index
    (log_seq, fulltext_seq, vector_seq, vectors, embedder, dim) before and after."""
    before: dict
    after: dict
    seconds: float = 0.0
