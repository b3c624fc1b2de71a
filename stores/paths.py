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


TMP = "tmp"                            # the store's private temp folder (spills, the stdin spool)


def tmp_prefix(kind: str) -> str:
    """How a temp entry in tmp/ is named: its kind and the pid of the
    process using it, so a start-up sweep removes only what a dead
    process left (`trace anatomy record` writes there without the lock)."""
    return f"{kind}-{os.getpid()}-"


def clear_tmp(store: Path) -> int:
    """Remove what a killed process left in the store's tmp/ (transcript
    text before redaction): entries of processes no longer running, and
    any not named by tmp_prefix. Returns how many went."""
    import shutil
    root = store / TMP
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        root.unlink()                      # never empty a folder elsewhere (a link), nor keep a file where tmp/ goes
        return 1
    try:
        names = os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    removed = 0
    for name in names:
        if _owner_running(name):
            continue
        path = root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed += 1
    return removed


def _owner_running(name: str) -> bool:
    parts = name.split("-", 2)
    if len(parts) < 3 or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def exchange(new: Path, current: Path) -> None:
    """Put the folder `new` where `current` is, in one step where the kernel
    allows it (renameat2 RENAME_EXCHANGE): a reader sees the old folder or
    the new one, never neither. `new` then holds the old folder (if any)."""
    if current.exists() and _rename_exchange(new, current):
        fsync_dir(current.parent)
        return
    if current.exists() or current.is_symlink():
        aside = current.with_name(current.name + ".old")
        if aside.exists():
            import shutil
            shutil.rmtree(aside, ignore_errors=True)
        os.rename(current, aside)
        os.rename(new, current)
        os.rename(aside, new)
    else:
        os.rename(new, current)
    fsync_dir(current.parent)


def _rename_exchange(a: Path, b: Path) -> bool:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


_PRIVATE_DIRS = ("", "segments", "artifacts", "fulltext", "vectors", "cache", "quarantine", TMP)


def tighten(store: Path, warn) -> None:
    """Transcripts are private: a store folder others may read or enter
    (made by hand, or by an older version) is made 0700 again, and said
    so; one owned by someone else is only warned about."""
    for name in _PRIVATE_DIRS:
        path = store / name if name else store
        try:
            st = os.stat(path)
        except OSError:
            continue
        loose = st.st_mode & 0o077
        if not loose or not os.path.isdir(path):
            continue
        shown = f"{oct(st.st_mode & 0o777)[2:]}"
        if st.st_uid == os.getuid():
            try:
                os.chmod(path, DIR_MODE)
                warn(f"{path} could be read by others (mode {shown}): tightened to 700")
                continue
            except OSError:
                pass
        warn(f"{path} can be read by others (mode {shown}) and could not be tightened: "
             f"run `chmod 700 {path}`")
