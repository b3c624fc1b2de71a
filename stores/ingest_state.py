"""Derived bookkeeping beside the log (SQLite, `state.db`): which source
keys are already in the log (idempotent re-ingest), fingerprints of files
already ingested whole (cron can skip them without parsing), and event /
token counters per session and kind (fast `trace stats`).

All of it is a projection of the log, rebuilt from it when missing: the
`keys_seq` watermark says how far it has caught up, and `catch_up` replays
the log past it. The log is written (and fsynced) first, the state second,
so after a crash the state can only lag the log, never lead it.

During an ingest a batch is recorded on a helper thread (`record_later`):
SQLite lets go of the interpreter lock while it writes, so the next batch
is parsed meanwhile. Every other use of the database waits for that write
first, so the connection is never used by two threads at once."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable

from stores.segments import iter_events
from stores.sql_in import select_in

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
    ident TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, head_sha TEXT, drafts INTEGER, format TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counts (
    session_id TEXT, kind TEXT, events INTEGER, tokens INTEGER, first_ts TEXT, last_ts TEXT,
    PRIMARY KEY (session_id, kind)
) WITHOUT ROWID;
"""


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


def key_rows(events: list[dict]):
    """(key,) per dedupe key of each event: most have one source key."""
    for e in events:
        source = e.get("source")
        if source and source.get("key") and not source.get("merged"):
            yield (source["key"],)
        else:
            yield from ((k,) for k in event_keys(e))


class IngestState:
    def __init__(self, store: Path):
        self.path = store / "state.db"
        # Used by the helper thread too, never at the same time (see wait_recorded).
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # The log is the durable copy: this file may lag it (catch_up fixes
        # that), so it does not need its own fsyncs.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.executescript(_SCHEMA)
        # Fingerprints of files ingested whole, written with the next batch's
        # keys (one transaction, not one per file) or on flush.
        self._files: dict[str, tuple] = {}
        self._recorder = None                        # the helper thread's executor, once needed
        self._recording = None                       # the write it runs now (a Future)
        self._recording_files: dict[str, tuple] = {}  # fingerprints that write holds
        self._reader: sqlite3.Connection | None = None

    # -- watermark ---------------------------------------------------------

    @property
    def keys_seq(self) -> int:
        self.wait_recorded()
        row = self.db.execute("SELECT value FROM meta WHERE name='keys_seq'").fetchone()
        return int(row[0]) if row else 0

    def catch_up(self, segments_dir: Path, log_seq: int) -> int:
        """Replay log events past the watermark; returns how many."""
        start = self.keys_seq
        if start >= log_seq:
            return 0
        replayed, batch = 0, []
        for event in iter_events(segments_dir, start_seq=start + 1):
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
        self.wait_recorded()
        return {row[0] for row in select_in(self.db, query, values)}

    def record(self, events: list[dict]) -> None:
        """Register appended events (keys, counters) and move the watermark,
        in one transaction."""
        self.wait_recorded()
        self._record_now(events, self._take_files())

    def record_later(self, events: list[dict]) -> None:
        """`record` on the helper thread; returns at once. Call only for
        events the log has already made durable."""
        self.wait_recorded()
        if self._recorder is None:
            from concurrent.futures import ThreadPoolExecutor
            self._recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace-state")
        files = self._recording_files = self._take_files()
        self._recording = self._recorder.submit(self._record_now, events, files)

    def wait_recorded(self) -> None:
        """Return once the helper thread's write is committed (raises its error)."""
        if self._recording is not None:
            pending, self._recording = self._recording, None
            try:
                pending.result()
            finally:
                self._recording_files = {}

    def _take_files(self) -> dict[str, tuple]:
        files, self._files = self._files, {}
        return files

    def _record_now(self, events: list[dict], files: dict[str, tuple]) -> None:
        if not events and not files:
            return
        if not events:
            with self._txn():
                self._write_files(files)
            return
        counts: dict[tuple[str, str], list] = {}
        tally(events, counts)
        with self._txn():
            self.db.executemany("INSERT OR IGNORE INTO seen(key) VALUES (?)", key_rows(events))
            self.db.executemany(
                """INSERT INTO counts(session_id, kind, events, tokens, first_ts, last_ts)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT(session_id, kind) DO UPDATE SET
                     events = events + excluded.events, tokens = tokens + excluded.tokens,
                     first_ts = MIN(COALESCE(first_ts, excluded.first_ts), COALESCE(excluded.first_ts, first_ts)),
                     last_ts = MAX(COALESCE(last_ts, excluded.last_ts), COALESCE(excluded.last_ts, last_ts))""",
                ((s, k, c[0], c[1], c[2], c[3]) for (s, k), c in counts.items()))
            self.db.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('keys_seq', ?)",
                            (str(events[-1]["seq"]),))
            self._write_files(files)

    # -- whole-file fingerprints ------------------------------------------

    def unchanged_file(self, ident: str, fingerprint: tuple[int, int, str]) -> tuple[int, str] | None:
        """(drafts, format) of a file's last clean ingest if it has not changed
        since (same size, mtime and first 64 KiB); else None."""
        # Asked before each file: it reads beside a write still running rather than wait for it.
        row = self._files.get(ident) or self._recording_files.get(ident) or self._read_db().execute(
            "SELECT ident, size, mtime_ns, head_sha, drafts, format FROM files WHERE ident=?", (ident,)).fetchone()
        if row is None or tuple(row[1:4]) != tuple(fingerprint):
            return None
        return int(row[4]), row[5]

    def remember_file(self, ident: str, fingerprint: tuple[int, int, str], drafts: int, fmt: str) -> None:
        """Call only once the file's events are durable in the log."""
        self._files[ident] = (ident, *fingerprint, drafts, fmt)

    def flush(self) -> None:
        """Write what is only in memory (file fingerprints)."""
        self.wait_recorded()
        if self._files:
            with self._txn():
                self._write_files(self._take_files())

    def _write_files(self, files: dict[str, tuple]) -> None:
        if files:
            self.db.executemany("INSERT OR REPLACE INTO files(ident, size, mtime_ns, head_sha, drafts, format) "
                                "VALUES (?,?,?,?,?,?)", files.values())

    def _read_db(self) -> sqlite3.Connection:
        """The connection to read with: a second one while the helper thread
        writes (WAL lets it read the last commit; what that write holds is
        also in `_recording_files`), else the one connection."""
        if self._recording is not None and not self._recording.done():
            if self._reader is None:
                self._reader = sqlite3.connect(self.path, isolation_level=None)
            return self._reader
        self.wait_recorded()
        return self.db

    # -- counters ----------------------------------------------------------

    def counts(self) -> list[tuple]:
        self.wait_recorded()
        return self.db.execute(
            "SELECT session_id, kind, events, tokens, first_ts, last_ts FROM counts ORDER BY session_id, kind"
        ).fetchall()

    def sessions(self) -> list[str]:
        self.wait_recorded()
        return [r[0] for r in self.db.execute("SELECT DISTINCT session_id FROM counts ORDER BY session_id")]

    def session_tokens(self, session_id: str) -> int:
        self.wait_recorded()
        row = self.db.execute("SELECT COALESCE(SUM(tokens), 0) FROM counts WHERE session_id=?",
                              (session_id,)).fetchone()
        return int(row[0])

    def reset(self) -> None:
        """Forget everything (the log is ahead of nothing; catch_up rebuilds)."""
        self.wait_recorded()
        self._files.clear()
        with self._txn():
            for table in ("meta", "seen", "files", "counts"):
                self.db.execute(f"DELETE FROM {table}")

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._recorder is not None:
                self._recorder.shutdown()
                self._recorder = None
            if self._reader is not None:
                self._reader.close()
            self.db.close()

    def _txn(self):
        db = self.db

        class _Txn:
            def __enter__(self_):
                db.execute("BEGIN")

            def __exit__(self_, exc_type, *rest):
                db.execute("ROLLBACK" if exc_type else "COMMIT")
        return _Txn()
