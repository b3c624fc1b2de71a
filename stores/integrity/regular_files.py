"""Opening a file of the store only when it is a regular file.

Everything under fulltext/, vectors/ and cache/ is rebuilt from the log, so
anything else standing where one of those files belongs (a named pipe, a
device) is damage to report and replace. Opening a named pipe to read it
waits for a writer that never comes: one left in a store would hang every
cron run for good. Opened without blocking, then checked, nothing waits."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def open_regular(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """A descriptor for `path` (os.open's flags and mode); OSError when
    something other than a regular file stands there."""
    fd = os.open(path, flags | os.O_NONBLOCK, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a named pipe or a device)", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path | str) -> bytes:
    """The bytes of a regular file (OSError for anything else, as above)."""
    with os.fdopen(open_regular(path), "rb") as f:
        return f.read()
