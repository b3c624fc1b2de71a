"""The per-session context cache on disk (`cache/`): a materialised
projection of the session's events (reducers/cache.py), kept so compaction
need not replay a long session every time.

The file holds the cache's item seqs, cycle, the log seq it has seen, its
tokens and the session's token count when it was saved (so the working set
can be told without reading anything: `working_set_tokens`). Loading reads
those events back through the full-text index (one seek each, batched per
segment) and projects the session's events that arrived since. Delete the
directory and the next load rebuilds the same cache from the log."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson

from reducers.cache import Cache, project
from stores.context.reading import SessionReader
from stores.context.sessions import session_tokens
from stores.fulltext import FulltextIndex

SCHEMA = 2
WINDOW_CEILING = 0.75            # bounded-working-set: never let the working set pass this share of the window


def cache_path(store_dir: Path, session_id: str, suffix: str = ".json") -> Path:
    return store_dir / "cache" / f"{hashlib.sha1(session_id.encode()).hexdigest()}{suffix}"


def load_cache(store, session_id: str, ft: FulltextIndex | None = None) -> Cache:
    ft = ft or FulltextIndex(store.dir)
    reader = SessionReader(store, ft, session_id)
    saved = read_saved(store.dir, session_id)
    cache = None
    if saved is not None:
        cache = Cache(session_id, cycle=saved["cycle"], log_seq=saved["log_seq"])
        located = {}
        for i in range(0, len(saved["seqs"]), 1000):
            for h in ft.lookup(saved["seqs"][i:i + 1000]):
                located[h.seq] = h
        if len(located) == len(saved["seqs"]):
            from stores.context.reading import Location
            cache.items = reader.read([Location(s, located[s].segment, located[s].offset, located[s].kind)
                                       for s in saved["seqs"]])
        else:
            cache = None                              # the file disagrees with the log: rebuild
    if cache is None:
        cache = Cache(session_id)
    for page in reader.forwards(cache.log_seq + 1):
        cache = project(session_id, reader.read(page), cache)
    return cache


def save_cache(store, cache: Cache, log_seq: int | None = None) -> None:
    path = cache_path(store.dir, cache.session_id)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = {"schema": SCHEMA, "session_id": cache.session_id, "cycle": cache.cycle,
            "log_seq": max(cache.log_seq, log_seq or 0), "seqs": [e["seq"] for e in cache.items],
            "tokens": cache.tokens, "session_tokens": session_tokens(store, cache.session_id)}
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(data))
    os.replace(tmp, path)


def read_saved(store_dir: Path, session_id: str) -> dict | None:
    try:
        data = orjson.loads(cache_path(store_dir, session_id).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    if data.get("schema") != SCHEMA or data.get("session_id") != session_id:
        return None
    return data


def working_set_tokens(store, session_id: str) -> int:
    """Tokens of the session's working set (its cache: everything no marker
    covers), from the saved cache and what the session gained since, or the
    whole session's when it was never compacted."""
    total = session_tokens(store, session_id)
    saved = read_saved(store.dir, session_id)
    if saved is None:
        return total
    return saved["tokens"] + max(total - saved["session_tokens"], 0)
