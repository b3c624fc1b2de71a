"""Which sessions the store knows, and their sizes, from the ingest state's
per-session counters (state.db): one indexed lookup for a known id, whatever
the store holds."""
from __future__ import annotations


def _state(store):
    from stores.ingest_state import IngestState
    return IngestState(store.dir)


def known_sessions(store) -> list[str]:
    state = _state(store)
    try:
        return state.sessions()
    finally:
        state.close()


def require_session(store, session_id: str) -> str:
    """The session's full id (a unique prefix will do); unknown or
    ambiguous, an error naming the first sessions the store holds."""
    state = _state(store)
    try:
        if state.sessions_among([session_id]):
            return session_id
    finally:
        state.close()
    from stores.sessions import resolve_session
    return resolve_session(store, session_id)


def session_tokens(store, session_id: str) -> int:
    state = _state(store)
    try:
        return state.session_tokens(session_id)
    finally:
        state.close()
