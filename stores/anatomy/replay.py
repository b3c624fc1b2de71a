"""`trace anatomy replay` and `trace anatomy diff` as functions: a session's
records in call order, and what one call had in context, rebuilt from its
record and the log.

Which log events a record names:
- a render (`trace context`): the seqs the pack carried, in pack order;
- a transcript or ingested call: the window between two draft keys (the
  first after the thread's last compaction, the last before the call) in
  the session's events, narrowed to the record's thread (the main
  conversation or one sub-agent, or one conversation of a capture);
- a request body recorded alone (`trace anatomy record`): none; its
  record lists the request's messages instead."""
from __future__ import annotations

from reducers.anatomy.records import public
from reducers.anatomy.timeline import brief, event_changes, in_call_order, message_changes, rows, slice_changes, with_window
from reducers.anatomy.thread_window import sent_to_model
from stores.anatomy.log import AnatomyLog
from stores.errors import TraceError
from stores.ingest_state import event_keys
from stores.log.lookup import session_events


def resolve_session(store, text: str) -> str:
    """The session whose records `text` names: the id itself, else a unique
    prefix of one (git-style; an ambiguous one lists the candidates)."""
    known = AnatomyLog(store.dir).sessions()
    if text in known:
        return text
    matches = [s for s in known if s.startswith(text)] if text else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise TraceError(f"session prefix {text!r} is ambiguous: {len(matches)} sessions with anatomy records "
                         f"start with it ({', '.join(matches[:5])}{' …' if len(matches) > 5 else ''}); "
                         f"give more of the id")
    return text


def session_records(store, session_id: str, window: int | None = None) -> list[dict]:
    """The session's records in call order (TraceError with a hint when it has none)."""
    records = AnatomyLog(store.dir).read(session_id)
    if not records:
        known = AnatomyLog(store.dir).sessions()
        hint = f"; sessions with records: {', '.join(known[:5])}{' …' if len(known) > 5 else ''}" if known else ""
        raise TraceError(f"no anatomy records for session {session_id!r}: they come from `trace anatomy record "
                         f"--session {session_id} FILE`, `trace ingest` of transcripts or logged API calls, and "
                         f"`trace context --session {session_id}`{hint}")
    return [with_window(r, window) for r in in_call_order(records)]


def replay(store, session_id: str, window: int | None = None) -> list[dict]:
    return rows(session_records(store, resolve_session(store, session_id), window))


def pick(records: list[dict], n: int, session_id: str, option: str = "--turn") -> dict:
    if not 1 <= n <= len(records):
        raise TraceError(f"{option} {n} is out of range: session {session_id!r} has turns 1..{len(records)}")
    return records[n - 1]


class SessionEvents:
    """The session's events, read from the log once, by seq and by key."""

    def __init__(self, store, session_id: str):
        self.events = list(session_events(store, session_id, conformed=True)) if store.exists() else []
        self.by_seq = {e["seq"]: e for e in self.events}
        self._by_key: dict[str, int] | None = None

    def position(self, key: str | None) -> int | None:
        if key is None:
            return None
        if self._by_key is None:
            self._by_key = {k: i for i, e in enumerate(self.events) for k in event_keys(e)}
        return self._by_key.get(key)

    def in_context(self, record: dict) -> list[dict] | None:
        """The events the record's call had in context, in context order;
        None when the record names none (or the log lacks them)."""
        ctx = record.get("context") or {}
        if isinstance(ctx.get("events"), list):
            return [self.by_seq[s] for s in ctx["events"] if s in self.by_seq]
        if "untilKey" not in ctx:
            return None
        if ctx.get("untilKey") is None or ctx.get("sinceKey") is None:
            return []
        start, end = self.position(ctx["sinceKey"]), self.position(ctx["untilKey"])
        if start is None or end is None:
            return None
        thread = ctx.get("thread")
        return [e for e in self.events[start:end + 1]
                if _in_thread(e, thread, record.get("sessionId")) and sent_to_model(e.get("meta"))]

    def markers(self, events: list[dict]) -> list[dict]:
        return [e for e in events if e.get("kind") == "marker"]


def _in_thread(event: dict, thread: str | None, session_id: str | None) -> bool:
    meta = event.get("meta") or {}
    source = event.get("source") or {}
    if thread in (None, "main"):
        return not meta.get("sidechain")
    if thread == "sidechain":
        return bool(meta.get("sidechain"))
    if thread.startswith("side:"):                     # a sub-agent known by the turn its prompt opened
        return bool(meta.get("sidechain")) and f"side:{event.get('turn_id')}" == thread
    key = source.get("key") or ""
    fmt_prefix = key.split("/", 1)[0]
    if fmt_prefix in ("oa", "an") and session_id:
        rest = key[len(fmt_prefix) + 1 + len(session_id) + 1:]
        return rest.split("/", 1)[0] == thread
    return meta.get("agent_id") == thread


def turn(store, session_id: str, n: int, window: int | None = None) -> dict:
    """What call `n` had in context: its record (slices, A.4 fields,
    messages), its markers and the log events."""
    session_id = resolve_session(store, session_id)
    records = session_records(store, session_id, window)
    record = pick(records, n, session_id)
    events = SessionEvents(store, session_id).in_context(record)
    out = {"turn": n, "turns": len(records), "record": public(record)}
    if events is None:
        out["events"] = None
        if "untilKey" in (record.get("context") or {}):
            out["note"] = ("the log does not hold the events this call's window names (ingest the transcript "
                           "into this store to see them)")
        elif record.get("origin") == "request":
            out["note"] = ("recorded from a request body alone (`trace anatomy record`): the record keeps each "
                           "message's role, size, slices and digest (record.messages), not its text; "
                           "`trace ingest` of the same body logs its messages too, and replay then lists them")
    else:
        out["events"] = [{**brief(e), **({"marker": True} if e.get("kind") == "marker" else {})} for e in events]
        out["markers"] = [{"id": e["id"], "seq": e["seq"], "text": e.get("text")} for e in events if e.get("kind") == "marker"]
    return out


def diff(store, session_id: str, a: int, b: int, window: int | None = None) -> dict:
    """What entered and left the context between calls A and B."""
    session_id = resolve_session(store, session_id)
    records = session_records(store, session_id, window)
    ra, rb = pick(records, a, session_id, "A ="), pick(records, b, session_id, "B =")
    log = SessionEvents(store, session_id)
    ea, eb = log.in_context(ra), log.in_context(rb)
    summary = {"session_id": session_id, "from": a, "to": b,
               "cycle": [ra.get("compactionCycle"), rb.get("compactionCycle")],
               "contextTokens": [ra.get("contextTokens"), rb.get("contextTokens")],
               "contextUtilPct": [ra.get("contextUtilPct"), rb.get("contextUtilPct")],
               "slices": slice_changes(ra, rb)}
    if ea is not None and eb is not None:
        # a transcript's window carries no TRACE markers; a `trace compact` between still explains what left
        markers_b = log.markers(eb) or [e for e in log.events if e.get("kind") == "marker"]
        changes = event_changes(ea, eb, (rb.get("context") or {}).get("leftOut") or (), markers_b)
    else:
        changes = message_changes(ra, rb)
    summary["left"] = sum(1 for c in changes if c["change"] == "left")
    summary["entered"] = sum(1 for c in changes if c["change"] == "entered")
    return {"summary": summary, "changes": changes}



def html_report(store, session_id: str, window: int | None = None) -> str:
    """The self-contained HTML report of a session's calls."""
    from reducers.anatomy import report_html
    session_id = resolve_session(store, session_id)
    records = session_records(store, session_id, window)
    log = SessionEvents(store, session_id)
    seqs: list[list[int] | None] = []
    events: dict[int, dict] = {}
    for r in records:
        found = log.in_context(r)
        seqs.append([e["seq"] for e in found] if found is not None else None)
        for e in found or ():
            if e["seq"] not in events:
                b = brief(e)
                events[e["seq"]] = {"kind": b["kind"], "snippet": b["snippet"], "tokens": b["tokens"]}
    return report_html.render(session_id, records, rows(records), seqs, events)
