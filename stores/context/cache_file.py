"""The per-session context cache on disk (`cache/`): a materialised
projection of the session's events (reducers/cache.py), kept so compaction
need not replay a long session every time.

The file holds the cache's item seqs, cycle, the log seq it has seen, its
tokens and the session's token count when it was saved (so the working set
can be told without reading anything: `working_set_tokens`). Loading reads
those events back through the full-text index (one seek each, batched per
segment) and projects the session's events that arrived since. Delete the
directory and the next load rebuilds the same cache from the log; a file
that is damaged, edited or not TRACE's (a checksum, field types, no links)
is not believed but rebuilt, and `trace verify` names it."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson

from reducers.cache import Cache, project
from stores.context.reading import SessionReader
from stores.context.sessions import session_tokens
from stores.index.fulltext import FulltextIndex
from stores.integrity.json_record import ABSENT, read_record

SCHEMA = 3                       # 3: a checksum of the content (`sum`)
WINDOW_CEILING = 0.75            # bounded-working-set: never let the working set pass this share of the window


OVERFLOW_SUFFIX = ".overflow.json"      # the overflow recovery's tries (stores/context/overflow.py)
COUNTS_SUFFIX = ".counts.json"          # token counts kept between renders (stores/context/kept_counts.py)


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
    data = {"schema": SCHEMA, "session_id": cache.session_id, "cycle": cache.cycle,
            "log_seq": max(cache.log_seq, log_seq or 0), "seqs": [e["seq"] for e in cache.items],
            "tokens": cache.tokens, "session_tokens": session_tokens(store, cache.session_id)}
    data["sum"] = content_sum(data)
    write_private(cache_path(store.dir, cache.session_id), orjson.dumps(data))


def write_private(path: Path, content: bytes) -> None:
    """Write a file in cache/ whole (a temp file renamed over it), never
    through a symbolic link: one where the folder or the file goes is
    removed first (the cache is derived, and TRACE never makes links)."""
    if path.parent.is_symlink():
        path.parent.unlink()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    os.replace(tmp, path)


def content_sum(data: dict) -> str:
    """A checksum of what a file in cache/ says (all but its "sum"), so a
    damaged or edited one is rebuilt rather than believed (a context cache
    names which events the model sees; kept counts decide what fits)."""
    body = {k: v for k, v in data.items() if k != "sum"}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _parse(path: Path) -> tuple[dict | None, str | None]:
    """(the cache file's content, None), or (None, why it cannot be used)."""
    data, unreadable = read_record(path)
    if data is ABSENT:
        return None, unreadable
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        if isinstance(data, dict) and type(data.get("schema")) is int and 0 < data["schema"] < SCHEMA:
            return None, None                    # an older version's: rebuilt on the next load, nothing wrong
        return None, "is not a context cache (damaged?)"
    if not (isinstance(data.get("session_id"), str)
            and all(type(data.get(k)) is int for k in ("cycle", "log_seq", "tokens", "session_tokens"))
            and isinstance(data.get("seqs"), list) and all(type(s) is int for s in data["seqs"])):
        return None, "holds fields of the wrong type"
    if data.get("sum") != content_sum(data):
        return None, "does not match its checksum"
    return data, None


def cache_file_problem(path: Path) -> str | None:
    """Why a file in cache/ is not one save_cache (or the overflow
    recovery, or kept_counts) wrote intact (verify)."""
    if path.is_symlink():
        return "is a symbolic link (TRACE never makes one)"
    if path.name.endswith(OVERFLOW_SUFFIX):
        from stores.context.overflow import overflow_file_problem
        return overflow_file_problem(path)
    if path.name.endswith(COUNTS_SUFFIX):
        from stores.context.kept_counts import counts_file_problem
        return counts_file_problem(path)
    data, why = _parse(path)
    if why is None and data is not None and cache_path(path.parent.parent, data["session_id"]) != path:
        return "belongs to another session"
    return why


def read_saved(store_dir: Path, session_id: str) -> dict | None:
    path = cache_path(store_dir, session_id)
    if path.is_symlink():
        return None
    data, why = _parse(path)
    if why is not None:
        path.unlink(missing_ok=True)             # damaged: gone, so the next save writes it afresh
    if data is None or data.get("session_id") != session_id:
        return None                              # missing or damaged: rebuilt from the log
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
