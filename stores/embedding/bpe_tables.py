"""The query tokenizer's tables (token -> id, "left right" -> merge rank)
kept in a small SQLite file beside the vector index, looked up key by key.

A cold `trace recall --mode hybrid` embeds one short query. Its BPE needs
the ranks of a hundred or so symbol pairs, but reading them from the
tokenizer's 1.8 MB JSON meant parsing all of it and building dicts of 93k
entries: ~45 ms a process, each time. The tables are written once (from
the JSON, ~0.3 s) and then each process opens the file and asks for the
few keys its query needs (~1 ms). The file is derived: it records the size
and mtime of the JSON it was built from, and a mismatch or any error
rebuilds it (or, when it cannot be written, the JSON's dicts serve as
before). Lookups give exactly what the dicts give."""
from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import orjson

from stores.paths import private_umask

NAME = "bpe-tables.sqlite"
_FORMAT = 1


class _Table:
    """`in` and `.get` over one table, memoised (what reducers/bpe.py asks of a dict)."""

    def __init__(self, db: sqlite3.Connection, sql: str):
        self._db, self._sql, self._seen = db, sql, {}

    def get(self, key: str, default=None):
        try:
            value = self._seen[key]
        except KeyError:
            row = self._db.execute(self._sql, (key,)).fetchone()
            value = self._seen[key] = row[0] if row else None
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None


def bpe_tables(tokenizer_json: Path, cache_dir: Path | None) -> tuple:
    """(vocab, ranks) for reducers.bpe.bpe_ids: from the cache in
    `cache_dir` when it matches the JSON, else from the JSON (writing the
    cache for the next process when `cache_dir` exists)."""
    st = tokenizer_json.stat()
    stamp = f"{_FORMAT}:{st.st_size}:{st.st_mtime_ns}"
    path = cache_dir / NAME if cache_dir is not None else None
    if path is not None and path.exists():
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            if db.execute("SELECT value FROM meta WHERE key = 'source'").fetchone() == (stamp,):
                return (_Table(db, "SELECT id FROM vocab WHERE token = ?"),
                        _Table(db, "SELECT rank FROM merges WHERE pair = ?"))
            db.close()
        except sqlite3.Error:
            pass                                   # unreadable: rebuilt below
    model = orjson.loads(tokenizer_json.read_bytes())["model"]
    vocab = model["vocab"]
    ranks = {m if isinstance(m, str) else " ".join(m): i for i, m in enumerate(model["merges"])}
    if path is not None and cache_dir.is_dir():
        _write(path, stamp, vocab, ranks)
    return vocab, ranks


def _write(path: Path, stamp: str, vocab: dict[str, int], ranks: dict[str, int]) -> None:
    """Written whole to a temporary name, then renamed into place: a reader
    sees the old file or the new one. Best effort (a read-only store, a
    vector index being rebuilt): the caller has the tables either way."""
    tmp = path.with_name(f"{NAME}.{os.getpid()}.tmp")
    try:
        with private_umask():
            tmp.unlink(missing_ok=True)
            db = sqlite3.connect(tmp)
            try:
                db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                                 "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                                 "CREATE TABLE vocab (token TEXT PRIMARY KEY, id INTEGER) WITHOUT ROWID;"
                                 "CREATE TABLE merges (pair TEXT PRIMARY KEY, rank INTEGER) WITHOUT ROWID;")
                db.executemany("INSERT INTO vocab VALUES (?, ?)", vocab.items())
                db.executemany("INSERT INTO merges VALUES (?, ?)", ranks.items())
                db.execute("INSERT INTO meta VALUES ('source', ?)", (stamp,))
                db.commit()
            finally:
                db.close()
            os.replace(tmp, path)
    except (OSError, sqlite3.Error):
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
