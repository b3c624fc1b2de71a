"""The append-only, segment-rotated audit log.

There is exactly one way in: `EventLog.append(batch)`. It assigns each
event its store-wide `seq`, a time-sortable `id`, `ingested_at` and the hash
chain (`prev`, `hash`), writes the batch with one write, fsyncs once per
batch (in the background if the caller asks, who must then wait for it
before recording anything that depends on the batch), and rotates to a new segment (fsyncing the directory) when the
active one passes its size target. There is no update and no delete:
sealed segments are never opened for writing again.

The caller must hold the store's WriterLock (see stores/store.py)."""
from __future__ import annotations

import errno
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from reducers.canonical import GENESIS, line_suffix, seal
from stores.errors import TraceError, UsageError
from stores.log.ids import IdGenerator
from stores.paths import ensure_dir, fsync_dir
from stores.log.segments import last_event, list_segments, read_last_line, sealed_event, segment_name

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024


def segment_bytes_from_env() -> int:
    raw = os.environ.get("TRACE_SEGMENT_BYTES")
    if not raw:
        return DEFAULT_SEGMENT_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"TRACE_SEGMENT_BYTES must be a positive whole number of bytes, got {raw!r}")
    return value


def utc_now_iso(clock: Callable[[], float] = time.time) -> str:
    t = clock()
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


@dataclass(slots=True)
class Tail:
    seq: int = 0
    hash: str = GENESIS
    id: str | None = None


class EventLog:
    def __init__(self, store: Path, *, segment_bytes: int | None = None,
                 warn: Callable[[str], None] = lambda msg: None, clock=time.time):
        self.store = store
        self.dir = ensure_dir(store / "segments")
        self.segment_bytes = segment_bytes or segment_bytes_from_env()
        self.warn = warn
        self.clock = clock
        self._fd: int | None = None
        self._active: Path | None = None
        self._active_first = 0
        self.last_locations: list[tuple[int, int]] = []
        self._active_size = 0
        self._created: list[Path] = []     # segments the batch being written opened
        self._rotate_to: int | None = None
        self._syncing: _Fsync | None = None  # the fsync thread of append(durable=False)
        self.tail = self._recover_and_read_tail()
        self.ids = IdGenerator(self.tail.id, clock=clock)

    # -- opening -----------------------------------------------------------

    def _recover_and_read_tail(self) -> Tail:
        segments = list_segments(self.dir)
        if not segments:
            return Tail()
        if segments[-1].path.is_symlink():            # recovery cuts the file: never one outside the store
            raise TraceError(f"{segments[-1].path} is a symbolic link; TRACE never makes one there: replace it "
                             f"with the file it points to")
        self._quarantine_torn_tail(segments[-1].path)
        event = last_event(self.dir)
        if event is None:
            return Tail()
        return Tail(seq=event["seq"], hash=event["hash"], id=event.get("id"))

    def _quarantine_torn_tail(self, path: Path) -> None:
        """Bytes after the last newline, or a last line that does not parse as
        a sealed event, are a torn write: move them to quarantine/ (never
        served, never silently dropped) and cut the active segment back."""
        while True:
            size = path.stat().st_size
            line, start, end = read_last_line(path, skip_torn=False)
            if end < size:                              # bytes with no newline after them
                self._move_to_quarantine(path, end, size, "no trailing newline")
                continue
            if line is None or sealed_event(line) is not None:
                return
            self._move_to_quarantine(path, start, end, "last line does not parse")

    def _move_to_quarantine(self, path: Path, start: int, end: int, why: str) -> None:
        qdir = ensure_dir(self.store / "quarantine")
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start)
        target, fd = _create_new(qdir, f"{path.name}.{start}", ".torn")
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(qdir)
        with open(path, "r+b") as f:              # only ever the active segment's torn end
            f.truncate(start)
            f.flush()
            os.fsync(f.fileno())
        self.warn(f"torn write in {path.name} at byte {start} ({len(data)} bytes, {why}) "
                  f"moved to {target}; it was never served")

    # -- appending ---------------------------------------------------------

    def append(self, events: list[dict], *, durable: bool = True) -> list[dict]:
        """Seal and persist a batch; returns the events as written (with
        seq, id, ingested_at, prev, hash), which are the given dicts,
        completed in place. Durable when this returns; with durable=False,
        once `wait_durable()` returns (the next append's fsync, a rotation
        and close wait for it too)."""
        if not events:
            return []
        now = utc_now_iso(self.clock)
        self.last_locations = []                  # (segment first seq, byte offset) per sealed event
        seq, prev = self.tail.seq, self.tail.hash
        self._ensure_active(seq + 1)
        start = (self._active, self._active_size)
        self._created = []
        try:
            return self._append(events, seq, prev, now, durable)
        except OSError as exc:                    # a full disk, an I/O error: keep no part of the batch
            self._roll_back(*start)
            raise LogWriteError(f"could not write to the log ({exc.strerror or exc}); nothing of the batch "
                                f"being written was kept; free space (or fix the disk) and run it again") from exc

    def _append(self, events: list[dict], seq: int, prev: str, now: str, durable: bool) -> list[dict]:
        pending: list[bytes] = []
        pending_size = 0
        fresh_ids = iter(self.ids.new_batch(sum(1 for e in events if not e.get("id"))))
        sealed = []
        locations = self.last_locations
        active_first, limit = self._active_first, self.segment_bytes
        for row in events:                        # completed in place: callers build them fresh
            seq += 1
            if "id" in row and row["id"]:
                self.ids.observe(row["id"])
            else:
                row["id"] = next(fresh_ids)
            row["seq"] = seq
            row["ingested_at"] = now
            row["prev"] = prev
            row, body, digest = seal(row)
            suffix = line_suffix(digest)
            size = len(body) - 1 + len(suffix)
            if self._active_size + pending_size + size > limit and self._active_size + pending_size > 0:
                self._write(pending, pending_size)
                pending, pending_size = [], 0
                self._rotate(seq)
                active_first = self._active_first
            locations.append((active_first, self._active_size + pending_size))
            pending.append(body[:-1])                   # joined once per batch (a slice beats a memoryview here)
            pending.append(suffix)
            pending_size += size
            row["hash"] = prev = digest
            sealed.append(row)
        self._write(pending, pending_size)
        if durable:
            os.fsync(self._fd)
        else:
            self._sync_in_background()
        self.tail = Tail(seq=seq, hash=prev, id=sealed[-1]["id"])
        return sealed

    def reserve(self, last_lost: int) -> None:
        """Never hand out seqs up to `last_lost` (events the log lost, whose
        seqs markers and indexes may still name): the next append follows
        it, chained to the last line still present."""
        if last_lost > self.tail.seq:
            self.tail = Tail(seq=last_lost, hash=self.tail.hash, id=self.tail.id)
            if self._fd is not None:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None
            self._rotate_to = last_lost + 1          # the next line starts a segment named for its seq

    def _roll_back(self, path: Path | None, size: int) -> None:
        """Undo a failed batch: segments it opened go, the one it began in is
        cut back to where it began (best effort: a line left half-written is
        a torn tail, which the next writer quarantines)."""
        try:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            for created in self._created:
                if created != path:
                    created.unlink(missing_ok=True)
            if path is not None:
                fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
                try:
                    os.ftruncate(fd, size)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                self._open_active(path)
        except OSError:
            self._fd = None

    def _sync_in_background(self) -> None:
        """fsync on a helper thread (the call releases the GIL), so the
        caller can parse its next batch meanwhile; `wait_durable` joins it."""
        self.wait_durable()
        self._syncing = _Fsync(self._fd)
        self._syncing.start()

    def wait_durable(self) -> None:
        """Return once every appended batch is on disk (raises the fsync's error)."""
        if self._syncing is not None:
            pending, self._syncing = self._syncing, None
            pending.join()
            if pending.error is not None:
                exc = pending.error
                raise LogWriteError(f"could not make the log durable ({exc.strerror or exc}); free space (or fix "
                                    f"the disk) and run it again: what reached the disk is kept") from exc

    def _ensure_active(self, next_seq: int) -> None:
        if self._fd is not None:
            return
        segments = list_segments(self.dir)
        if self._rotate_to is not None:               # after a gap: a segment's name is its first seq
            self._rotate_to = None
            self._rotate(next_seq)
        elif segments:
            path = segments[-1].path
            self._open_active(path)
        else:
            self._rotate(next_seq)

    def _open_active(self, path: Path) -> None:
        try:                                       # never through a link: a segment is a file of ours
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise TraceError(f"{path} is a symbolic link; TRACE never makes one there: replace it with "
                                 f"the file it points to") from None
            raise
        self._active = path
        self._active_first = int(path.name.split(".", 1)[0])
        self._active_size = os.fstat(self._fd).st_size

    def _rotate(self, first_seq: int) -> None:
        self.wait_durable()
        if self._fd is not None:
            os.fsync(self._fd)                     # the sealed segment is complete on disk
            os.close(self._fd)
            self._fd = None
        self._open_active(self.dir / segment_name(first_seq))
        self._created.append(self._active)
        fsync_dir(self.dir)                        # the new file's entry survives a crash

    def _write(self, parts: list, size: int) -> None:
        if not parts:
            return
        data = memoryview(b"".join(parts))
        while data:
            n = os.write(self._fd, data)
            data = data[n:]
        self._active_size += size

    def close(self) -> None:
        self.wait_durable()
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


class _Fsync(threading.Thread):
    """One fsync on its own thread, its error kept for wait_durable (a plain
    thread: concurrent.futures' import alone costs a hook call ~15 ms)."""

    def __init__(self, fd: int):
        super().__init__(name="trace-fsync", daemon=True)
        self.fd = fd
        self.error: OSError | None = None

    def run(self) -> None:
        try:
            os.fsync(self.fd)
        except OSError as exc:
            self.error = exc


class LogWriteError(TraceError):
    """The log could not be written (a full disk, an I/O error)."""


LOST_EVENTS = "lost-events.log"       # in quarantine/: what a writer found missing from the log


def note_lost_events(store: Path, first: int, last: int, how: str = "its tail was cut") -> Path:
    """Record, durably and for `trace verify` to repeat, that events
    first..last are gone from the log (the derived state had recorded them)
    before the writer rebuilds that state from what is left."""
    path = ensure_dir(store / "quarantine") / LOST_EVENTS
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{stamp} events {first}..{last} were missing from the log ({how})\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _create_new(directory: Path, stem: str, suffix: str) -> tuple[Path, int]:
    """A file that did not exist: `stem.suffix`, else `stem.1.suffix`, `stem.2.suffix`…
    (O_EXCL: torn writes at the same offset, one per crash, each keep their own)."""
    n = 0
    while True:
        target = directory / (f"{stem}{suffix}" if n == 0 else f"{stem}.{n}{suffix}")
        try:
            return target, os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            n += 1
