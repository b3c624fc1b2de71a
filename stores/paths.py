"""Where the store lives, and the privacy of what is written there.

One function decides the store directory (like llm's user_dir()):
`--store DIR`, else $TRACE_HOME, else $XDG_DATA_HOME/trace, else
~/.local/share/trace. Transcripts are private: directories 0700, files 0600."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def store_dir(explicit: str | os.PathLike | None = None) -> Path:
    if explicit:
        path, named = Path(explicit).expanduser(), "--store"
    elif os.environ.get("TRACE_HOME"):
        path, named = Path(os.environ["TRACE_HOME"]).expanduser(), "TRACE_HOME"
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
        path, named = base / "trace", "XDG_DATA_HOME"
    if path.exists() and not path.is_dir():
        from stores.errors import UsageError
        raise UsageError(f"the store {path} is a file, not a directory; point {named} at a directory")
    return path


def ensure_dir(path: Path) -> Path:
    """Create a private directory (and parents) if missing; fsync the parent
    so the new entry survives a crash."""
    if path.is_dir():
        return path
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    fsync_dir(path.parent)
    return path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def private_umask():
    """Files created inside (by us, SQLite or Tantivy) are 0600, dirs 0700."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)
