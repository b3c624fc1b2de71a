"""The single-writer lock. Appends are serialised by an exclusive flock on
`<store>/LOCK`; readers never take it (they ignore a line still being
written). The kernel drops a flock when its process dies, so a SIGKILLed
writer never leaves the store locked."""
from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from stores.errors import StoreLocked, TraceError

_POLL_SECONDS = 0.05


class WriterLock:
    def __init__(self, store: Path, name: str = "LOCK", holder: str = "another writer"):
        self.path = store / name
        self.holder = holder                  # who holds it, as the error says
        self._fd: int | None = None

    def acquire(self, wait: float = 0.0) -> "WriterLock":
        try:                       # never through a link: the holder's pid is written into this file
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise TraceError(f"{self.path} is a folder, not TRACE's lock file: move it out of the store "
                                 f"and run this again") from None
            if exc.errno != errno.ELOOP:
                raise
            raise TraceError(f"{self.path} is a symbolic link ({os.readlink(self.path)}); TRACE never makes one and "
                             f"will not write through it: remove it (`rm {self.path}`) and run this again") from None
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise StoreLocked(f"store {self.path.parent} is locked by {self.holder}{holder}",
                                      waited=max(wait, 0.0)) from None
                time.sleep(_POLL_SECONDS)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    @property
    def fd(self) -> int | None:
        """The locked file: a child process that inherits it keeps the store
        locked until it exits too."""
        return self._fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)          # no holder named: readers see no writer at work
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def writer_at_work(store: Path) -> bool:
    """Whether a writer holds the store now (the pid LOCK names is alive):
    its index files may be between a commit and their checksum record, so
    a reader trusts the engine's own atomic commit rather than the record."""
    try:
        fd = os.open(store / "LOCK", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        pid = _read_holder(fd)[len(" (pid "):-1]
    finally:
        os.close(fd)
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
