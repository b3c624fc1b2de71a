"""Reading and writing an agent's settings file safely: the file is read
once, the change is shown as a unified diff, and the new text replaces the
old atomically (temp file, fsync, rename) after a copy of the old one is
kept beside it as `NAME.trace-backup`."""
from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

BACKUP_SUFFIX = ".trace-backup"


@dataclass
class FileChange:
    path: Path
    before: str | None          # None: the file does not exist yet
    after: str | None           # None: the file is to be removed (it only ever held what we added)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, fromfile=f"{self.path} (now)",
                                            tofile=f"{self.path} (after)"))


def read_text(path: Path) -> str | None:
    """The file's text with its own line endings (a CRLF file stays CRLF)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        from stores.errors import TraceError
        raise TraceError(f"{path}: not UTF-8 text ({exc.reason}); nothing was written") from None


def apply(change: FileChange) -> Path | None:
    """Write the change; returns the backup's path (None for a new file)."""
    if not change.changed:
        return None
    path = change.path
    backup = None
    if change.before is not None:
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        _atomic_write(backup, change.before, like=path)
    after = change.after
    if path.is_symlink():
        # a settings file kept elsewhere (a dotfiles repository) and linked here: written where it lives,
        # so the link stays; one emptied stays, as an empty document, rather than dangle
        path = Path(os.path.realpath(path))
        if after is None:
            after = "{}\n" if path.suffix == ".json" else ""
    if after is None:
        path.unlink()
        return backup
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, after, like=path if path.exists() else None)
    return backup


def _atomic_write(path: Path, text: str, like: Path | None) -> None:
    mode = (path.stat().st_mode if path.exists() else like.stat().st_mode if like and like.exists() else 0o600) & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
