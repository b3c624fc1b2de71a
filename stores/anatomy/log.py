"""`anatomy/`: one append-only JSONL file of anatomy records per session.

Records are observations, like the log itself, not a projection of it:
what a `trace context` render chose, the tool schemas and system prompt
of a request body, a transcript's usage figures are nowhere in
`segments/`, so `anatomy/` cannot be rebuilt from the log and is never
deleted by `trace reindex`. What a record says about the log (the seqs a
render sent, the keys that bound a transcript call's window) is resolved
against the log when replayed.

Writers (ingest under the store lock, `trace context` and `trace anatomy
record` without it) serialise per session with flock on the session's
file: the key check, the previous record and the append happen under it,
so a record is written once and follows the one before. A record without
its trailing newline is a torn write: never served, cut off by the next
writer.

Renders and `trace anatomy record` fsync what they append. Ingest does
not (a first ingest of a big projects folder would pay one fsync per
session): a power cut may lose the records of the last run, and
`trace ingest --recheck` writes them again from the transcripts."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from pathlib import Path
from typing import Iterator

import orjson

from reducers.redact import redact
from reducers.redact_fields import redact_value
from stores.errors import IntegrityError
from stores.paths import FILE_MODE, ensure_dir, fsync_dir

DIRNAME = "anatomy"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def session_file_name(session_id: str) -> str:
    """Readable and collision-free: the session id made safe for a file
    name, cut to 60 characters, then a digest of the real id."""
    stem = _UNSAFE.sub("-", session_id).strip("-.")[:60] or "session"
    return f"{stem}-{hashlib.sha256(session_id.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}.jsonl"


class SessionRecords:
    """A session's records while its file is locked."""

    def __init__(self, path: Path, records: list[dict]):
        self.path = path
        self.records = records
        self.keys = {r.get("key") for r in records}
        self.pending: list[dict] = []

    @property
    def last(self) -> dict | None:
        if self.pending:
            return self.pending[-1]
        return self.records[-1] if self.records else None

    def add(self, record: dict) -> bool:
        """Queue a record, redacted (every writer comes here: a record
        quotes paths, ids and usage as the source wrote them); False when
        the session already holds its key."""
        record = redact_value(record)[0]
        if record.get("key") in self.keys:
            return False
        self.keys.add(record.get("key"))
        self.pending.append(record)
        return True


class AnatomyLog:
    def __init__(self, store_dir: Path):
        self.dir = Path(store_dir) / DIRNAME

    def path(self, session_id: str) -> Path:
        return self.dir / session_file_name(redact(session_id)[0])     # no secret in a file name

    def exists(self, session_id: str) -> bool:
        return self.path(session_id).is_file()

    def read(self, session_id: str) -> list[dict]:
        """The session's records in append order (a torn last line is left out)."""
        path = self.path(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        return _decode(path, data, session_id)

    def sessions(self) -> list[str]:
        """Sessions that have records (their first record names them)."""
        out = []
        for path in sorted(self.dir.glob("*.jsonl")) if self.dir.is_dir() else ():
            with open(path, "rb") as f:
                first = f.readline()
            if first.endswith(b"\n"):
                try:
                    out.append(orjson.loads(first)["sessionId"])
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    continue
        return out

    @contextlib.contextmanager
    def session(self, session_id: str, warn=lambda msg: None, durable: bool = True) -> Iterator[SessionRecords]:
        """Lock the session's file; what is `add`ed is appended (one write,
        fsynced when `durable`) when the block ends without an error."""
        ensure_dir(self.dir)
        path = self.path(session_id)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = _read_all(fd)
            if data and not data.endswith(b"\n"):
                keep = data.rfind(b"\n") + 1
                warn(f"{path}: a torn last record ({len(data) - keep} bytes, an interrupted write) was cut off")
                os.ftruncate(fd, keep)
                data = data[:keep]
            held = SessionRecords(path, _decode(path, data, session_id))
            yield held
            if held.pending:
                os.write(fd, b"".join(orjson.dumps(r) + b"\n" for r in held.pending))
                if durable:
                    os.fsync(fd)
                held.records.extend(held.pending)
                held.pending = []
            if created and durable:
                fsync_dir(self.dir)
        finally:
            os.close(fd)                            # releases the lock


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _decode(path: Path, data: bytes, session_id: str) -> list[dict]:
    out = []
    lines = data.split(b"\n")
    if lines and lines[-1] != b"":
        lines = lines[:-1]                          # torn: not served
    for n, raw in enumerate(lines, 1):
        if not raw:
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise IntegrityError(f"{path}:{n}: an anatomy record is not valid JSON (the file was damaged; "
                                 f"restore it from a backup or move it aside)") from None
        if isinstance(record, dict) and record.get("sessionId") == session_id:
            out.append(record)
    return out
