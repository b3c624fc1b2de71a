"""Finding events in the log: by seq, seq range, id, or session; and the
export stream (events with their artifacts' content inlined, so a store
can be rebuilt elsewhere from the export alone)."""
from __future__ import annotations

import collections
import re
from typing import Iterator

import orjson

from reducers.event_schema import NOT_CARRIED, conform
from stores.errors import UsageError
from stores.log.ids import is_ulid
from stores.log.segments import iter_events, iter_log_lines

_RANGE = re.compile(r"^(\d+)\s*(?:\.\.|-|–)\s*(\d+)$")


def parse_selector(text: str) -> tuple[str, object]:
    """'812' -> ('seq', 812); '812..947' -> ('range', (812, 947));
    '3..9,12,20..31' -> ('ranges', [(3, 9), (12, 12), (20, 31)]) (what a
    marker names when its events are not one run); a 26-char ULID -> ('id', ...)."""
    text = text.strip()
    if "," in text:
        parts = [parse_selector(p) for p in text.split(",") if p.strip()]
        if not parts or any(kind not in ("seq", "range") for kind, _ in parts):
            raise UsageError(f"{text!r}: a list takes seqs and ranges only, e.g. 3..9,12,20..31")
        return "ranges", sorted((v, v) if kind == "seq" else v for kind, v in parts)
    if text.isdigit():
        return "seq", int(text)
    m = _RANGE.match(text)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if a > b:
            raise UsageError(f"range {text} runs backwards; write it as {b}..{a}")
        return "range", (a, b)
    if is_ulid(text):
        return "id", text.upper()
    raise UsageError(f"{text!r} is not a seq (812), a range (812..947) or an event id (26 chars)")


def select_events(store, selector: str | None = None, session: str | None = None, marker: str | None = None,
                  tail: int | None = None) -> list[dict]:
    """`trace show`'s selection: a seq, range or id (within `session` when
    given), a session's events (its last `tail`), or a marker's evicted
    events. Usage errors and "nothing matches" raise with the fix named."""
    from stores.errors import TraceError
    if marker and (selector or session) or not (selector or session or marker):
        raise UsageError("give SELECTOR (seq, range, id), --session ID, both (a range within a session) "
                         "or --marker ID alone")
    if tail and not session:
        raise UsageError("--tail goes with --session")
    if selector:
        parse_selector(selector)               # a malformed selector is a usage error, store or not
    store.require()
    if session:
        from stores.sessions import resolve_session
        session = resolve_session(store, session)      # a unique prefix names its session
    if marker:
        events = marker_events(store, marker)
    elif selector:
        events = [e for e in events_by_selector(store, selector) if not session or e["session_id"] == session]
        events = events[-tail:] if tail else events
    else:
        events = list(session_events(store, session, tail))
    if not events:
        what = " ".join(filter(None, (selector, session and f"in session {session}", marker and f"marker {marker}")))
        raise TraceError(f"no event matches {what}; `trace sessions` lists sessions, `trace stats` the last seq")
    return events


def events_by_selector(store, selector: str) -> list[dict]:
    kind, value = parse_selector(selector)
    if kind == "seq":
        return list(iter_events(store.segments_dir, value, value))
    if kind == "range":
        return list(iter_events(store.segments_dir, *value))
    if kind == "ranges":
        out, last = [], 0
        for a, b in value:
            a = max(a, last + 1)                    # overlapping ranges print each event once
            if a <= b:
                out.extend(iter_events(store.segments_dir, a, b))
                last = b
        return out
    found = event_by_id(store, value)
    return [found] if found else []


def event_by_id(store, event_id: str) -> dict | None:
    """Scan for the id's exact bytes first and parse only candidate lines:
    grep speed rather than parse-every-line speed."""
    needle = b'"id":"' + event_id.encode() + b'"'
    for _, event in iter_log_lines(store.segments(), lambda data: needle in data):
        if event.get("id") == event_id:
            return event
    return None


def session_events(store, session_id: str, tail: int | None = None, *, conformed: bool = False) -> Iterator[dict]:
    """A session's events as written (`show`, `export`), or `conformed` for
    readers that derive things from them."""
    needle = b'"session_id":' + orjson.dumps(session_id)
    keep = collections.deque(maxlen=tail) if tail else None
    for _, event in iter_log_lines(store.segments(), lambda data: needle in data):
        if conformed:
            event = conform(event)
        if event.get("session_id") != session_id:
            continue
        if keep is not None:
            keep.append(event)
        else:
            yield event
    if keep is not None:
        yield from keep


def full_text(store, event: dict) -> str:
    """The event's complete content: its artifact's bytes when it has one."""
    art = event.get("artifact")
    if art and art.get("id"):
        return store.artifacts.read(art["id"]).decode("utf-8", "surrogatepass")
    return event.get("text", "")


def export_events(store, session_id: str | None = None, with_artifacts: bool = True) -> Iterator[dict]:
    events = session_events(store, session_id) if session_id else iter_events(store.segments_dir)
    for event in events:
        if with_artifacts:
            readable = conform(event)            # a malformed old line is exported as written, contents aside
            # (content an imported event never brought along stays behind: it keeps its mark)
            art = readable.get("artifact")
            if art and _exportable(store, art):
                event = {**event, "artifact_content": full_text(store, readable)}
            attachments = (readable.get("meta") or {}).get("attachments")
            if attachments and all(_exportable(store, a) for a in attachments):
                event = {**event, "attachments_content": attachment_blocks(store, readable)}
        yield event


def _exportable(store, ref: dict) -> bool:
    """False for a reference an imported event brought without its content
    (the store never held it); a carried one that is missing is an error."""
    return ref.get(NOT_CARRIED) is not True or store.artifacts.exists(str(ref.get("id")))


def attachment_blocks(store, event: dict) -> list:
    """The media blocks an event's attachments hold, as the source gave them."""
    return [orjson.loads(store.artifacts.read(a["id"])) for a in event["meta"]["attachments"]]


def marker_events(store, marker_id: str) -> list[dict]:
    """The events a marker covers (its session's events in its ranges,
    markers excluded), in log order."""
    from stores.errors import TraceError
    marker = event_by_id(store, marker_id.upper())
    info = ((marker or {}).get("meta") or {}).get("marker")
    if marker is None or marker.get("kind") != "marker" or not info:
        raise TraceError(f"{marker_id} is not a marker's event id; `trace context --session S --format json` "
                         f"lists the markers of a session")
    out = []
    for a, b in info.get("ranges", []):
        out.extend(e for e in iter_events(store.segments_dir, a, b)
                   if e.get("session_id") == marker["session_id"] and e.get("kind") != "marker")
    return out
