"""Token counts kept between processes, per session, beside the context
cache (`cache/<sha1 of the session>.counts.json`).

A runtime starts a `trace context` process before every model call, and
each one renders mostly what the last one did. Before tiktoken's encoder
is built a process counts in pure Python (reducers/tokens.py), which was
~0.1 s of a cold 8,000-token render; with the last render's counts at
hand it counts only what is new. The file holds the counts the last
renders of the last few scopes asked for (so it stays the size of a few
packs), filed by a digest of the text, with a checksum: a damaged or edited file is not believed (a
wrong count could push a pack over budget) but dropped, and `trace
verify` names it. Delete it and nothing is lost but the time."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import orjson

from reducers import tokens
from stores.context.cache_file import COUNTS_SUFFIX, cache_path, content_sum, write_private
from stores.integrity.json_record import ABSENT, read_record


KEEP_SCOPES = 8          # a count no scope asked for in this many is dropped


@contextmanager
def kept_counts(store, session_id: str):
    """Count tokens with the session's kept counts while inside; save
    what was counted afresh on the way out. Only a process that has not
    built the encoder reads them (past that, counting is cheaper than the
    file), and a scope inside another is the outer one's."""
    if not tokens.counting_is_cold() or tokens.remembering():
        yield
        return
    path = cache_path(store.dir, session_id, COUNTS_SUFFIX)
    scope, kept = _read(path, session_id)
    tokens.remember_counts({d: n for d, (n, _) in kept.items()})
    try:
        yield
    finally:
        used, added = tokens.forget_counts()
        if added:
            scope += 1
            kept = {d: v for d, v in kept.items() if v[1] > scope - KEEP_SCOPES}
            kept.update((d, [n, scope]) for d, n in used.items())
            _save(path, session_id, scope, kept)


def _read(path: Path, session_id: str) -> tuple[int, dict[str, list[int]]]:
    if path.is_symlink():
        return 0, {}
    data, _ = _parse(path)
    if data is None or data["session_id"] != session_id:
        return 0, {}
    return data["scope"], data["counts"]


def _save(path: Path, session_id: str, scope: int, counts: dict[str, list[int]]) -> None:
    data = {"session_id": session_id, "encoding": tokens.ENCODING_NAME, "scope": scope, "counts": counts}
    data["sum"] = content_sum(data)
    try:
        write_private(path, orjson.dumps(data))
    except OSError:
        pass                  # a read-only or full disk costs the next render time, nothing else


def _parse(path: Path) -> tuple[dict | None, str | None]:
    data, unreadable = read_record(path)
    if data is ABSENT:
        return None, unreadable
    if not (isinstance(data, dict) and isinstance(data.get("session_id"), str)
            and type(data.get("scope")) is int and isinstance(data.get("counts"), dict)
            and all(isinstance(v, list) and len(v) == 2 and all(type(n) is int and n >= 0 for n in v)
                    for v in data["counts"].values())):
        return None, "is not a file of kept token counts (damaged?)"
    if data.get("encoding") != tokens.ENCODING_NAME:
        return None, None                     # another encoding's counts: not ours to use, nothing wrong
    if data.get("sum") != content_sum(data):
        return None, "does not match its checksum"
    return data, None


def counts_file_problem(path: Path) -> str | None:
    """Why a file of kept counts is not one _save wrote intact (verify)."""
    data, why = _parse(path)
    if why is None and data is not None and cache_path(path.parent.parent, data["session_id"], COUNTS_SUFFIX) != path:
        return "belongs to another session"
    return why
