"""Which sessions the store knows, and their sizes, from the ingest state's
per-session counters (state.db): one indexed lookup for a known id, whatever
the store holds. state.db is derived: when it is damaged (a writer rebuilds
it) or lags the log, the log answers."""
from __future__ import annotations

import sqlite3
from typing import Callable, TypeVar

from stores.log.segments import iter_events

T = TypeVar("T")


def _from_state(store, ask: Callable, otherwise: Callable[[], T]) -> T:
    """ask(state), or otherwise() when state.db cannot be read."""
    from stores.ingest_state import IngestState
    from stores.integrity.derived import STAT, state_damage
    if not state_damage(store.dir, STAT):
        try:
            state = IngestState(store.dir)
            try:
                return ask(state)
            finally:
                state.close()
        except sqlite3.DatabaseError:
            pass                                  # damaged deeper than the size check looks
    return otherwise()


def known_sessions(store) -> list[str]:
    known, seen = _from_state(store, lambda s: (set(s.sessions()), s.keys_seq), lambda: (set(), 0))
    known.update(e["session_id"] for e in iter_events(store.segments_dir, start_seq=seen + 1, conformed=True))
    return sorted(known)


def require_session(store, session_id: str) -> str:
    """The session's full id (a unique prefix will do); unknown or
    ambiguous, an error naming the first sessions the store holds."""
    if _from_state(store, lambda s: bool(s.sessions_among([session_id])), lambda: False):
        return session_id
    from stores.sessions import resolve_session
    return resolve_session(store, session_id)


def session_tokens(store, session_id: str) -> int:
    return _from_state(store, lambda s: s.session_tokens(session_id),
                       lambda: sum(e.get("tokens") or 0 for e in iter_events(store.segments_dir, conformed=True)
                                   if e["session_id"] == session_id))
