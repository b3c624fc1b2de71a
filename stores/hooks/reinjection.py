"""What a session gets back after its agent compacted it: where its events
are in the log and how to reach them, its live markers, notes, working
state and digest lines — pointers and facts, not a summary."""
from __future__ import annotations

from reducers.cache import live_markers
from reducers.markers import pointer_of

HEADER = "[TRACE memory: this session's full history is kept verbatim and can be recalled]"


def session_memory(store, session_id: str, max_chars: int = 9_000) -> str:
    """The additionalContext for a compacted session ('' when the store has
    nothing of it). Oldest markers go first when it is over max_chars."""
    from stores.log.lookup import session_events
    if not store.exists():
        return ""
    count, first, last, markers = 0, None, None, []
    for e in session_events(store, session_id, conformed=True):
        count += 1
        first = first or e
        last = e
        if e["kind"] == "marker":
            markers.append(e)
    if not count:
        return ""
    markers = [pointer_of(m) for m in live_markers(markers)]
    when = lambda e: (e.get("ts") or e.get("ingested_at") or "")[:16].replace("T", " ")
    lines = [HEADER,
             f"Session {session_id}: {count} events in the log, seq {first['seq']}–{last['seq']} "
             f"({when(first)} – {when(last)}). What compaction dropped is still there: call the `recall` tool "
             f"(TRACE's MCP server) with the words you need, or run `trace recall \"…\" --session {session_id}`; "
             f"`trace show {first['seq']}..{last['seq']} --session {session_id}` prints events verbatim."]
    sections = []
    state_text, note_texts = _continuity(store, session_id)
    if state_text:
        sections.append(["Working state:", state_text.strip()])
    if note_texts:
        sections.append(["Notes:", *(f"- {t.strip()}" for t in note_texts)])
    digest = _digest_lines(store)
    if digest:
        sections.append(["Digest:", *digest])
    marker_lines = [f"- {m['text'].strip()}" for m in markers]
    body = "\n".join(lines + [ln for s in sections for ln in s])
    while marker_lines and len(body) + sum(len(m) + 1 for m in marker_lines) + 9 > max_chars:
        marker_lines.pop(0)
    text = "\n".join(lines + (["Markers:", *marker_lines] if marker_lines else []) + [ln for s in sections for ln in s])
    return text[:max_chars]


def _continuity(store, session_id: str) -> tuple[str | None, list[str]]:
    """The working state and the notes (the session's and the global ones)."""
    from stores.notes import list_notes
    from stores.working_state import working_state
    found = working_state(store, session_id)
    return (found or {}).get("text"), [n["text"] for n in list_notes(store, session=session_id, limit=20)][::-1]


def _digest_lines(store, max_lines: int = 40) -> list[str]:
    """The store's digest (the sweep's facts, one line each) once a sweep has
    run; else nothing."""
    from stores.digest import render_store_digest
    from stores.errors import TraceError
    try:
        digest = render_store_digest(store, max_lines=max_lines)
    except TraceError:
        return []
    if not (digest.facts or digest.episodes):    # a heading and a comment only: nothing to tell the agent
        return []
    return [ln for ln in digest.text.splitlines() if ln.strip()]
