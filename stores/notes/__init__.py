"""Agent notes (continuity spec, Tier 5): things an agent or a person
explicitly asks to remember. A note is a `note` event in the log, written
through the append chokepoint (redacted like everything else), never
evicted from a session's context and never superseded by the sweep.

    from stores.notes import add_note, list_notes
    add_note(store, "squash-merge PRs, never rebase", "decision", session="4f1c…")
    list_notes(store, session="4f1c…")          # newest first

A note without a session belongs to GLOBAL_SESSION: notes for every
session (what the push pack does with them is the pack's business)."""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from reducers.drafts import Draft
from stores.errors import UsageError

CATEGORIES = ("task", "decision", "preference", "correction", "context")
GLOBAL_SESSION = "trace-notes"
NOTE_FORMAT = "note"
MAX_NOTE_CHARS = 20_000
_LIST_LIMIT = 10_000


def add_note(store, text: str, category: str, session: str | None = None, *, wait: float = 0.0,
             ts: str | None = None) -> dict:
    """Append a note; returns it as `list_notes` shows it (with its id and seq)."""
    text = (text or "").strip()
    if not text:
        raise UsageError("empty note: say what to remember, e.g. trace note add --category decision \"use uv, not pip\"")
    if len(text) > MAX_NOTE_CHARS:
        raise UsageError(f"a note holds at most {MAX_NOTE_CHARS} characters (this one has {len(text)}); "
                         f"keep notes short, or ingest long text as a transcript")
    if category not in CATEGORIES:
        raise UsageError(f"unknown --category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    session = session or GLOBAL_SESSION
    ts = ts or _now()
    digest = hashlib.blake2b(f"{category}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    draft = Draft(kind="note", text=text, session_id=session, key=f"{NOTE_FORMAT}/{session}/{ts}/{digest}", ts=ts,
                  meta={"note": {"category": category}})
    from stores.log.appender import Appender
    sealed: list[dict] = []
    with store.writer(wait=wait, embed=False) as w:
        appender = Appender(w.log, w.state, w.artifacts, warn=store.warn,
                            hooks=[*store.append_hooks(w), lambda events, *_: sealed.extend(events)])
        appender.append_drafts([draft], source_format=NOTE_FORMAT, source_path="trace note add")
    if not sealed:
        raise UsageError("that note is already in the store (same text, category, session and time)")
    return note_view(sealed[0])


def list_notes(store, session: str | None = None, category: str | None = None,
               limit: int | None = None) -> list[dict]:
    """Notes, newest first: one session's (its own and the global ones) or
    every note when `session` is None."""
    if category is not None and category not in CATEGORIES:
        raise UsageError(f"unknown --category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    store.require()
    sessions = None if session is None else {session, GLOBAL_SESSION}
    by_seq = {n["seq"]: n for n in (note_view(e) for e in _note_events(store))
              if (sessions is None or n["session_id"] in sessions) and (category is None or n["category"] == category)}
    notes = sorted(by_seq.values(), key=lambda n: -n["seq"])
    return notes[:limit] if limit else notes


def note_view(event: dict) -> dict:
    category = ((event.get("meta") or {}).get("note") or {}).get("category") or "context"
    return {"id": event["id"], "seq": event["seq"], "session_id": event["session_id"], "ts": event.get("ts"),
            "category": category, "text": event.get("text") or ""}


def _note_events(store):
    """Every note event: those the full-text index knows (one seek each),
    then the log past its watermark; the whole log when there is no index."""
    from stores.index.fulltext import FulltextIndex
    from stores.log.segments import read_event_at
    index = FulltextIndex(store.dir)
    try:
        usable = index.usable() and index.open() is not None
        after = index.watermark if usable else 0
        if usable:
            for hit in index.newest(["note"], limit=_LIST_LIMIT):
                event = read_event_at(store.segments_dir, hit.segment, hit.offset)
                if event is not None and event.get("kind") == "note":
                    yield event
    finally:
        index.close()
    for event in store.events(start_seq=max(after, 0) + 1):
        if event.get("kind") == "note":
            yield event


def _now() -> str:
    t = datetime.now(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
