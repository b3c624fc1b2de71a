"""Overflow recovery (rfc-005 Phase 2): the model call failed on context
length, so the runtime asks again with `--overflow`. Each try shrinks the
pack further — at most 85%, then 72%, then 60% of the budget — and is
recorded beside the cache, so the next `--overflow` for the same state of
the session takes the next step; a session that has grown since (the call
went through) starts over at the first. After the third try there is
nothing sensible left to take away: it is an error naming the fix."""
from __future__ import annotations

from pathlib import Path

import orjson

from stores.context.cache_file import OVERFLOW_SUFFIX, cache_path, write_private
from stores.errors import TraceError
from stores.integrity.json_record import ABSENT, read_record

STEPS = (0.85, 0.72, 0.60)


def next_try(store, session_id: str, session_seq: int, budget: int) -> tuple[int, int, list[dict]]:
    """(try number, token limit, the tries recorded before it)."""
    tries = [t for t in _read(store, session_id) if t.get("session_seq") == session_seq and t.get("budget") == budget]
    n = len(tries) + 1
    if n > len(STEPS):
        raise TraceError(f"overflow recovery gave up after {len(STEPS)} tries (packs of at most "
                         f"{', '.join(f'{int(s * 100)}%' for s in STEPS)} of --budget {budget}) and the model "
                         f"still overflowed: its context is smaller than that; lower --budget")
    return n, int(budget * STEPS[n - 1]), tries


def record_try(store, session_id: str, entry: dict) -> None:
    kept = [t for t in _read(store, session_id)
            if t.get("session_seq") == entry["session_seq"] and t.get("budget") == entry["budget"]]
    write_private(cache_path(store.dir, session_id, OVERFLOW_SUFFIX),
                  orjson.dumps({"session_id": session_id, "tries": [*kept, entry]}))


def _read(store, session_id: str) -> list[dict]:
    path = cache_path(store.dir, session_id, OVERFLOW_SUFFIX)
    if path.is_symlink() or overflow_file_problem(path):
        return []                                # damaged or not ours: the tries start over
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return []
    return data["tries"] if data["session_id"] == session_id else []


def overflow_file_problem(path: Path) -> str | None:
    """Why a file of tries is not one record_try wrote (verify, and before
    it is read)."""
    data, unreadable = read_record(path)
    if data is ABSENT:
        return unreadable
    if not (isinstance(data, dict) and isinstance(data.get("session_id"), str)
            and isinstance(data.get("tries"), list)
            and all(isinstance(t, dict) and type(t.get("session_seq")) is int and type(t.get("budget")) is int
                    for t in data["tries"])):
        return "is not a record of overflow tries (damaged?)"
    return None
