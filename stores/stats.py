"""`trace stats`: what the store holds, from the derived counters (fast on
a million events) topped up with any log lines they have not seen yet."""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

from stores.api.result import Result
from stores.ingest_state import IngestState, tally
from stores.integrity.log_identity import another_log, recorded_identity
from stores.log.segments import iter_events


@dataclass
class Stats(Result):
    store: str
    events: int = 0
    tokens: int = 0
    sessions: int = 0
    segments: int = 0
    bytes: int = 0
    artifacts: int = 0
    artifact_bytes: int = 0
    last_seq: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_session: list[dict] = field(default_factory=list)


def _unreadable_state(store, exc: sqlite3.DatabaseError) -> str:
    from stores.integrity.access import not_writable_error, unwritable
    locked_out = unwritable(store.dir)
    if locked_out:        # the writers' one line, fix included (a read-only mount has its own)
        return f"state.db cannot be read, so counted from the log instead: {not_writable_error(store.dir, locked_out)}"
    return (f"state.db cannot be read ({exc}): counted from the log instead; the next writer (or `trace verify "
            f"--repair`) rebuilds it")


def stats(store) -> Stats:
    out = Stats(store=str(store.dir))
    if not store.exists():
        return out
    segments = store.segments()
    out.segments = len(segments)
    out.bytes = sum(s.path.stat().st_size for s in segments)
    rows: dict[tuple[str, str], list] = {}
    foreign = another_log(store.dir, recorded_identity(store.dir))
    problem = f"state.db {foreign}: counted from the log instead; the next writer rebuilds it" if foreign else None
    if not problem:
        try:
            watermark = _recorded_counts(store, rows)
        except sqlite3.DatabaseError as exc:
            problem = _unreadable_state(store, exc)
    if problem:
        store.warn(problem)
        rows.clear()
        watermark = 0
    out.last_seq = watermark

    def lagging():                                   # lines the state lags behind
        for e in iter_events(store.segments_dir, start_seq=watermark + 1, conformed=True):
            out.last_seq = e["seq"]
            yield e
    tally(lagging(), rows)
    sessions: dict[str, dict] = {}
    for (session_id, kind), (events, tokens, first_ts, last_ts) in rows.items():
        out.events += events
        out.tokens += tokens
        out.by_kind[kind] = out.by_kind.get(kind, 0) + events
        s = sessions.setdefault(session_id, {"session_id": session_id, "events": 0, "tokens": 0,
                                             "first_ts": first_ts, "last_ts": last_ts})
        s["events"] += events
        s["tokens"] += tokens
        s["first_ts"] = min(filter(None, (s["first_ts"], first_ts)), default=None)
        s["last_ts"] = max(filter(None, (s["last_ts"], last_ts)), default=None)
    out.sessions = len(sessions)
    out.by_session = sorted(sessions.values(), key=lambda s: s["last_ts"] or "", reverse=True)
    out.by_kind = dict(sorted(out.by_kind.items(), key=lambda kv: -kv[1]))
    for artifact_id in store.artifacts.all_ids():
        out.artifacts += 1
        out.artifact_bytes += os.path.getsize(store.artifacts.path_for(artifact_id))
    return out


def _recorded_counts(store, rows: dict[tuple[str, str], list]) -> int:
    """The counters state.db holds, into `rows`; returns how far they reach."""
    from stores.integrity.derived import STAT, state_damage
    damage = state_damage(store.dir, STAT)
    if damage:
        raise sqlite3.DatabaseError(damage[0].why)
    state = IngestState(store.dir)
    try:
        watermark = state.keys_seq
        for session_id, kind, events, tokens, first_ts, last_ts in state.counts():
            rows[(session_id, kind)] = [events, tokens, first_ts, last_ts]
    finally:
        state.close()
    return watermark
