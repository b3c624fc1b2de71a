"""Derived bookkeeping beside the log (SQLite, `state.db`): which source
keys are already in the log (idempotent re-ingest), fingerprints of files
already ingested whole (cron can skip them without parsing), event /
token counters per session and kind (fast `trace stats`), and each
session's latest working state (its newest `task_state` event's, so the
next ingest folds on from it).

All of it is a projection of the log, rebuilt from it when missing: the
`keys_seq` watermark says how far it has caught up, and `catch_up` replays
the log past it. The log is written (and fsynced) first, the state second,
so after a crash the state can only lag the log, never lead it."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable

import orjson

from stores.log.segments import iter_events
from stores.sql_in import select_in

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
    ident TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, head_sha TEXT, drafts INTEGER, format TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seals (
    first_seq INTEGER PRIMARY KEY, size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER,
    last_seq INTEGER, last_hash TEXT
);
CREATE TABLE IF NOT EXISTS working_state (session_id TEXT PRIMARY KEY, seq INTEGER, state TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counts (
    session_id TEXT, kind TEXT, events INTEGER, tokens INTEGER, first_ts TEXT, last_ts TEXT,
    PRIMARY KEY (session_id, kind)
) WITHOUT ROWID;
"""


_KEYS_SEQ = "SELECT value FROM meta WHERE name='keys_seq'"


def recorded_seq(store: Path) -> int:
    """How far state.db says the log reached (its keys_seq), read without
    writing: for `verify`, which takes no lock (0 when absent or unreadable:
    the next writer rebuilds it, and it vouches for nothing meanwhile)."""
    path = store / "state.db"
    if not path.is_file():
        return 0
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute(_KEYS_SEQ).fetchone()
        finally:
            db.close()
        return int(row[0]) if row else 0
    except (sqlite3.Error, ValueError):
        return 0


def event_keys(event: dict) -> list[str]:
    """Every dedupe key an event in the log stands for."""
    source = event.get("source") or {}
    keys = []
    if source.get("key"):
        keys.append(source["key"])
    keys.extend(source.get("merged") or ())
    if not keys:
        keys.append(f"id/{event['id']}")
    return keys


def tally(events: Iterable[dict], counts: dict[tuple[str, str], list]) -> None:
    """Add events to per-(session, kind) counters: [events, tokens, first ts, last ts]."""
    for e in events:
        group = (e["session_id"], e["kind"])
        c = counts.get(group)
        if c is None:
            c = counts[group] = [0, 0, None, None]
        c[0] += 1
        c[1] += e.get("tokens") or 0
        ts = e.get("ts") or e.get("ingested_at")
        if ts:
            if c[2] is None or ts < c[2]:
                c[2] = ts
            if c[3] is None or ts > c[3]:
                c[3] = ts


def all_keys(events: list[dict]) -> list[str]:
    """Every dedupe key of the events (most have one source key)."""
    keys = []
    for e in events:
        source = e.get("source")
        if source and source.get("key") and not source.get("merged"):
            keys.append(source["key"])
        else:
            keys.extend(event_keys(e))
    return keys


class IngestState:
    def __init__(self, store: Path):
        self.path = store / "state.db"
        self.db = sqlite3.connect(self.path, isolation_level=None)
        # The log is the durable copy: this file may lag it (catch_up fixes
        # that), so it does not need its own fsyncs.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.executescript(_SCHEMA)
        # Fingerprints of files ingested whole, written with the next batch's
        # keys (one transaction, not one per file) or on flush.
        self._files: dict[str, tuple] = {}

    # -- watermark ---------------------------------------------------------

    @property
    def keys_seq(self) -> int:
        row = self.db.execute(_KEYS_SEQ).fetchone()
        return int(row[0]) if row else 0

    def catch_up(self, segments_dir: Path, log_seq: int) -> int:
        """Replay log events past the watermark; returns how many."""
        start = self.keys_seq
        if start >= log_seq:
            return 0
        replayed, batch = 0, []
        for event in iter_events(segments_dir, start_seq=start + 1, conformed=True, past_damage=True):
            batch.append(event)
            if len(batch) >= 5000:
                self.record(batch)
                replayed += len(batch)
                batch = []
        self.record(batch)
        return replayed + len(batch)

    # -- keys --------------------------------------------------------------

    def seen_among(self, keys: Iterable[str]) -> set[str]:
        return self._among("SELECT key FROM seen WHERE key IN ({})", keys)

    def sessions_among(self, sessions: Iterable[str]) -> set[str]:
        """Those of `sessions` the log holds events of (as recorded so far)."""
        return self._among("SELECT DISTINCT session_id FROM counts WHERE session_id IN ({})", sessions)

    def _among(self, query: str, values: Iterable[str]) -> set[str]:
        return {row[0] for row in select_in(self.db, query, values)}

    def record(self, events: list[dict]) -> None:
        """Register appended events (keys, counters) and move the watermark,
        in one transaction."""
        if not events:
            return
        counts: dict[tuple[str, str], list] = {}
        tally(events, counts)
        with self._txn():
            _add_keys(self.db, all_keys(events))
            self.db.executemany(
                """INSERT INTO counts(session_id, kind, events, tokens, first_ts, last_ts)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT(session_id, kind) DO UPDATE SET
                     events = events + excluded.events, tokens = tokens + excluded.tokens,
                     first_ts = MIN(COALESCE(first_ts, excluded.first_ts), COALESCE(excluded.first_ts, first_ts)),
                     last_ts = MAX(COALESCE(last_ts, excluded.last_ts), COALESCE(excluded.last_ts, last_ts))""",
                ((s, k, c[0], c[1], c[2], c[3]) for (s, k), c in counts.items()))
            states = {e["session_id"]: e for e in events if e["kind"] == "task_state"}
            if states:
                self.db.executemany("INSERT OR REPLACE INTO working_state(session_id, seq, state) VALUES (?, ?, ?)",
                                    ((sid, e["seq"], _state_json(e)) for sid, e in states.items()))
            self.db.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('keys_seq', ?)",
                            (str(events[-1]["seq"]),))
            self._write_files()

    def record_declined(self, keys: list[str]) -> None:
        """Remember the keys of drafts the reconciler declined (NONE): a
        re-ingest must not decide them again (over a budget that has moved
        since, it would add them late and out of order). They are not in
        the log, so a state rebuilt from it forgets them."""
        if keys:
            with self._txn():
                _add_keys(self.db, keys)

    # -- whole-file fingerprints ------------------------------------------

    def unchanged_file(self, ident: str, fingerprint: tuple[int, int, str]) -> tuple[int, str] | None:
        """(drafts, format) of a file's last clean ingest if it has not changed
        since (same size, mtime and first 64 KiB); else None."""
        row = self._files.get(ident) or self.db.execute(
            "SELECT ident, size, mtime_ns, head_sha, drafts, format FROM files WHERE ident=?", (ident,)).fetchone()
        if row is None or tuple(row[1:4]) != tuple(fingerprint):
            return None
        return int(row[4]), row[5]

    def previous_file(self, ident: str) -> tuple[int, int, str, int, str] | None:
        """(size, mtime_ns, head_sha, drafts, format) of a file's last clean ingest, or None."""
        row = self._files.get(ident) or self.db.execute(
            "SELECT ident, size, mtime_ns, head_sha, drafts, format FROM files WHERE ident=?", (ident,)).fetchone()
        return None if row is None else (int(row[1]), int(row[2]), row[3], int(row[4]), row[5])

    def remember_file(self, ident: str, fingerprint: tuple[int, int, str], drafts: int, fmt: str) -> None:
        """Call only once the file's events are durable in the log."""
        self._files[ident] = (ident, *fingerprint, drafts, fmt)

    def flush(self) -> None:
        """Write what is only in memory (file fingerprints)."""
        if self._files:
            with self._txn():
                self._write_files()

    def _write_files(self) -> None:
        if self._files:
            self.db.executemany("INSERT OR REPLACE INTO files(ident, size, mtime_ns, head_sha, drafts, format) "
                                "VALUES (?,?,?,?,?,?)", self._files.values())
            self._files.clear()

    # -- counters ----------------------------------------------------------

    def counts(self) -> list[tuple]:
        return self.db.execute(
            "SELECT session_id, kind, events, tokens, first_ts, last_ts FROM counts ORDER BY session_id, kind"
        ).fetchall()

    def sessions(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT session_id FROM counts ORDER BY session_id")]

    def session_tokens(self, session_id: str) -> int:
        row = self.db.execute("SELECT COALESCE(SUM(tokens), 0) FROM counts WHERE session_id=?",
                              (session_id,)).fetchone()
        return int(row[0])

    def working_state(self, session_id: str) -> tuple[int, dict] | None:
        """(seq, state) of the session's newest task_state event, if any."""
        row = self.db.execute("SELECT seq, state FROM working_state WHERE session_id=?", (session_id,)).fetchone()
        return (int(row[0]), orjson.loads(row[1])) if row else None

    def reset(self) -> None:
        """Forget everything (the log is ahead of nothing; catch_up rebuilds)."""
        self._files.clear()
        with self._txn():
            for table in ("meta", "seen", "files", "counts", "working_state", "seals"):
                self.db.execute(f"DELETE FROM {table}")

    # -- the log's seals (stores/integrity/seals.py) -------------------------

    def seals(self) -> dict:
        from stores.integrity.seals import Seal
        return {row[0]: Seal(*row) for row in self.db.execute(
            "SELECT first_seq, size, mtime_ns, ctime_ns, ino, last_seq, last_hash FROM seals")}

    def record_seals(self, seals: dict) -> None:
        """Replace the seals (call once the log's appends are durable)."""
        with self._txn():
            self.db.execute("DELETE FROM seals")
            self.db.executemany("INSERT INTO seals VALUES (?, ?, ?, ?, ?, ?, ?)",
                                ((s.first_seq, s.size, s.mtime_ns, s.ctime_ns, s.ino, s.last_seq, s.last_hash)
                                 for s in seals.values()))

    def identity(self) -> dict[str, str]:
        """Which log this state describes (stores/integrity/log_identity.py)."""
        from stores.integrity.log_identity import read_identity
        return read_identity(self.db)

    def record_identity(self, identity: dict[str, str]) -> None:
        if identity.items() - self.identity().items():
            with self._txn():
                self.db.executemany("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", identity.items())

    def close(self) -> None:
        self.flush()
        self.db.close()

    def _txn(self):
        db = self.db

        class _Txn:
            def __enter__(self_):
                db.execute("BEGIN")

            def __exit__(self_, exc_type, *rest):
                db.execute("ROLLBACK" if exc_type else "COMMIT")
        return _Txn()


def _state_json(event: dict) -> str:
    """A task_state event's structured state (its text alone when another
    tool wrote it)."""
    state = (event.get("meta") or {}).get("working_state")
    if not isinstance(state, dict):
        state = {"text": event.get("text") or ""}
    return orjson.dumps(state).decode()


def read_working_state(store: Path, session_id: str) -> tuple[int, dict] | None:
    """A session's latest working state, read without writing (no lock):
    (seq of its task_state event, state), or None."""
    path = store / "state.db"
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT seq, state FROM working_state WHERE session_id=?", (session_id,)).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return (int(row[0]), orjson.loads(row[1])) if row else None


def _add_keys(db: sqlite3.Connection, keys: list[str]) -> None:
    # One statement over a JSON array: binding a parameter per key cost
    # twice SQLite's own work. SQLite's JSON ends a string at U+0000, so a
    # key holding one (or what JSON cannot hold) is bound as it is.
    try:
        data = orjson.dumps(keys)
    except TypeError:
        data = None
    if data is None or b"\\u0000" in data:
        db.executemany("INSERT OR IGNORE INTO seen(key) VALUES (?)", ((k,) for k in keys))
    else:
        db.execute("INSERT OR IGNORE INTO seen(key) SELECT value FROM json_each(?)", (data,))
