"""The per-session context cache on disk (`cache/`): a materialised
projection of the session's events (reducers/cache.py), kept so `trace
context` need not replay a long session on every call.

The file holds the cache's item seqs, cycle and the log seq it has seen;
loading reads those events back (one seek each, via the full-text index's
locations) and projects any of the session's events that arrived since.
Delete the directory and the next load rebuilds the same cache from the log."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson

from reducers.cache import Cache, project
from stores.errors import TraceError
from stores.fulltext import FulltextIndex
from stores.segments import read_event_at

SCHEMA = 2                 # 2: a checksum of the content (`sum`)


def _path(store_dir: Path, session_id: str) -> Path:
    return store_dir / "cache" / f"{hashlib.sha1(session_id.encode()).hexdigest()}.json"


def known_sessions(store) -> list[str]:
    import sqlite3

    from stores.ingest_state import IngestState
    from stores.integrity.derived import STAT, state_damage
    from stores.segments import iter_events
    known, seen = set(), 0
    if not state_damage(store.dir, STAT):
        try:
            state = IngestState(store.dir)
            try:
                known, seen = set(state.sessions()), state.keys_seq
            finally:
                state.close()
        except sqlite3.DatabaseError:
            known, seen = set(), 0                   # damaged: the log knows
    known.update(e["session_id"] for e in iter_events(store.segments_dir, start_seq=seen + 1, conformed=True))
    return sorted(known)


def require_session(store, session_id: str) -> None:
    sessions = known_sessions(store)
    if session_id not in sessions:
        raise TraceError(f"unknown session {session_id!r}: the store knows {len(sessions)} session(s); "
                         f"list them with `trace stats --json`")


def load_cache(store, session_id: str, ft: FulltextIndex | None = None) -> Cache:
    ft = ft or FulltextIndex(store.dir)
    if ft.open() is None:
        raise TraceError("the full-text index is not available; run `trace index` first")
    saved = _read(store.dir, session_id)
    if saved is not None:
        cache = Cache(session_id, cycle=saved["cycle"], log_seq=saved["log_seq"])
        located = {s: (g, o) for s, g, o in _locate(ft, saved["seqs"])}
        items = [read_event_at(store.segments_dir, *located[s]) for s in saved["seqs"] if s in located]
        if len(items) == len(saved["seqs"]) and all(items):
            cache.items = items
        else:
            saved = None                              # the file disagrees with the log: rebuild
    if saved is None:
        cache = Cache(session_id)
    after = cache.log_seq if saved is not None else 0
    fresh = (read_event_at(store.segments_dir, g, o) for _, g, o in ft.session_locations(session_id, after))
    cache = project(session_id, (e for e in fresh if e is not None), cache)
    return cache


def save_cache(store, cache: Cache, log_seq: int | None = None) -> None:
    path = _path(store.dir, cache.session_id)
    if path.parent.is_symlink():           # derived, and never written through a link: made afresh
        path.parent.unlink()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = {"schema": SCHEMA, "session_id": cache.session_id, "cycle": cache.cycle,
            "log_seq": max(cache.log_seq, log_seq or 0), "seqs": [e["seq"] for e in cache.items]}
    data["sum"] = _sum(data)
    if path.is_symlink():                  # a link where a cache file goes: replaced, never written through
        path.unlink()
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(orjson.dumps(data))
    os.replace(tmp, path)


def _sum(data: dict) -> str:
    """A checksum of what a cache file says, so a damaged or edited one is
    rebuilt rather than believed (it names which events the model sees)."""
    body = {k: v for k, v in data.items() if k != "sum"}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _parse(path: Path) -> tuple[dict | None, str | None]:
    """(the cache file's content, None), or (None, why it cannot be used)."""
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None, None
    except (OSError, orjson.JSONDecodeError) as exc:
        return None, f"cannot be read ({exc})"
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        if isinstance(data, dict) and type(data.get("schema")) is int and 0 < data["schema"] < SCHEMA:
            return None, None                    # an older version's: rebuilt on the next load, nothing wrong
        return None, "is not a context cache (damaged?)"
    if not (isinstance(data.get("session_id"), str) and type(data.get("cycle")) is int
            and type(data.get("log_seq")) is int and isinstance(data.get("seqs"), list)
            and all(type(s) is int for s in data["seqs"])):
        return None, "holds fields of the wrong type"
    if data.get("sum") != _sum(data):
        return None, "does not match its checksum"
    return data, None


def cache_file_problem(path: Path) -> str | None:
    """Why a file in cache/ is not one save_cache wrote intact (verify)."""
    if path.is_symlink():
        return "is a symbolic link (TRACE never makes one)"
    data, why = _parse(path)
    if why is None and data is not None and _path(path.parent.parent, data["session_id"]) != path:
        return "belongs to another session"
    return why


def _read(store_dir: Path, session_id: str) -> dict | None:
    path = _path(store_dir, session_id)
    if path.is_symlink():
        return None
    data, why = _parse(path)
    if why is not None:
        path.unlink(missing_ok=True)             # damaged: gone, so the next save writes it afresh
    if data is None or data.get("session_id") != session_id:
        return None                              # missing or damaged: rebuilt from the log
    return data


def _locate(ft: FulltextIndex, seqs: list[int]):
    for i in range(0, len(seqs), 1000):
        for h in ft.lookup(seqs[i:i + 1000]):
            yield h.seq, h.segment, h.offset
