"""Which sessions the store knows, and their sizes, from the ingest state's
per-session counters (state.db): one indexed lookup, whatever the store holds."""
from __future__ import annotations

from stores.errors import TraceError

SHOWN = 5


def _state(store):
    from stores.ingest_state import IngestState
    return IngestState(store.dir)


def require_session(store, session_id: str) -> None:
    state = _state(store)
    try:
        if state.sessions_among([session_id]):
            return
        sessions = state.sessions()
    finally:
        state.close()
    shown = ", ".join(sessions[:SHOWN])
    more = f" and {len(sessions) - SHOWN} more (`trace stats --json` lists them)" if len(sessions) > SHOWN else ""
    known = f"known: {shown}{more}" if sessions else "the store holds no sessions yet"
    raise TraceError(f"unknown session {session_id!r}; {len(sessions)} session(s) {known}")


def session_tokens(store, session_id: str) -> int:
    state = _state(store)
    try:
        return state.session_tokens(session_id)
    finally:
        state.close()
