"""The sessions a store holds, and finding one by a prefix of its id.

Counts and times come from the derived counters (`stats`); the source,
format and title from a few events of each session found through the
full-text index (the first event, the first user message, the newest
title), so listing costs a handful of lookups per session, never a scan
of the log."""
from __future__ import annotations

from dataclasses import dataclass

from stores.api.result import Result
from stores.errors import TraceError, UsageError
from stores.log.segments import read_event_at

TITLE_SCAN = 200              # system events looked at (newest first) for a session title
FIRST_LINE_CHARS = 120
SHOWN_CANDIDATES = 5


@dataclass
class SessionInfo(Result):
    session_id: str
    format: str | None
    source: str | None
    first_ts: str | None
    last_ts: str | None
    events: int
    tokens: int
    title: str | None                # the session's own title, else its first user line


def list_sessions(store, *, source: str | None = None, since: str | None = None,
                  grep: str | None = None) -> list[SessionInfo]:
    """Every session, newest first. `source` keeps sessions whose format
    is that name or whose source path contains it; `since` (ISO time or an
    age such as 3d) keeps sessions active since then; `grep` keeps sessions
    whose id, title or source path contains it (case-insensitive)."""
    from stores.index.fulltext import FulltextIndex
    from stores.recall import parse_time
    from stores.stats import stats

    store.require()
    since_ms = None
    if since is not None:
        since_ms = parse_time(since)
        if since_ms is None:
            raise UsageError(f"--since {since!r} is not a time: use ISO 8601 (2026-11-22) or an age like 3d, 12h")
    ft = FulltextIndex(store.dir)
    try:
        index = ft.open()
        out = []
        for row in stats(store).by_session:
            if since_ms is not None and _millis(row["last_ts"]) < since_ms:
                continue
            info = SessionInfo(row["session_id"], None, None, row["first_ts"], row["last_ts"],
                               row["events"], row["tokens"], None)
            if index is not None:
                _describe(store, index, info)
            if source and not (info.format == source or source in (info.source or "")):
                continue
            if grep and not any(grep.lower() in (v or "").lower() for v in (info.session_id, info.title, info.source)):
                continue
            out.append(info)
        return out
    finally:
        ft.close()


def resolve_session(store, text: str) -> str:
    """A session id from the id itself or a unique prefix of it (git-style).
    Unknown or ambiguous: an error naming what the store has."""
    from stores.context.sessions import known_sessions
    sessions = known_sessions(store)
    if text in sessions:
        return text
    matches = [s for s in sessions if s.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(matches[:SHOWN_CANDIDATES]) + (" …" if len(matches) > SHOWN_CANDIDATES else "")
        raise TraceError(f"session prefix {text!r} is ambiguous: {len(matches)} sessions start with it "
                         f"({shown}); give more of the id")
    listed = ", ".join(sessions[:SHOWN_CANDIDATES]) + (" …" if len(sessions) > SHOWN_CANDIDATES else "")
    raise TraceError(f"unknown session {text!r}: the store knows {len(sessions)} session(s)"
                     + (f" ({listed})" if sessions else "") + "; list them with `trace sessions`")


def _describe(store, index, info: SessionInfo) -> None:
    first = _events(store, index, info.session_id, None, newest=False, limit=1)
    if first:
        src = first[0].get("source") or {}
        info.format, info.source = src.get("format"), src.get("path")
    for e in _events(store, index, info.session_id, ["system"], newest=True, limit=TITLE_SCAN):
        if ((e.get("meta") or {}).get("subtype")) == "title" and (e.get("text") or "").strip():
            info.title = e["text"].strip()
            break
    if info.title is None:
        users = _events(store, index, info.session_id, ["user"], newest=False, limit=1)
        if users:
            info.title = _first_line(users[0].get("text") or "")


def _events(store, index, session_id: str, kinds: list[str] | None, *, newest: bool, limit: int) -> list[dict]:
    import tantivy
    schema = index.schema
    parts = [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "session", session_id))]
    if kinds:
        parts.append((tantivy.Occur.Must, tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "kind", k)) for k in kinds])))
    searcher = index.searcher()
    order = tantivy.Order.Desc if newest else tantivy.Order.Asc
    hits = searcher.search(tantivy.Query.boolean_query(parts), limit, order_by_field="seq", order=order).hits
    addrs = [addr for _, addr in hits]
    out = []
    for seg, off in zip(searcher.fast_field_values("seg", addrs), searcher.fast_field_values("off", addrs)):
        event = read_event_at(store.segments_dir, seg, off)
        if event is not None:
            out.append(event)
    return out


def _first_line(text: str) -> str:
    line = next((l.strip() for l in text.splitlines() if l.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[:FIRST_LINE_CHARS - 1] + "…"


def _millis(ts: str | None) -> int:
    from stores.index.fulltext_documents import ts_millis
    return ts_millis(ts) if ts else 0
