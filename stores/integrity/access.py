"""Whether this user may write the store. TRACE writes to its store even
to read it (the writer lock, SQLite's shared-memory file beside a WAL
database, Tantivy's lock files), so a store the user cannot write fails
in ways that look like damage: "attempt to write a readonly database" is
SQLite's answer to a folder without write permission. Every place that
would blame a derived file asks here first, and a store that is not
writable is one line naming the fix, never "damaged, rebuilt"."""
from __future__ import annotations

import os
from pathlib import Path

from stores.errors import TraceError

# Folders whose files are written in place, not only replaced (a segment
# appended to, SQLite files, the vector index): each file must be writable.
_WRITTEN_IN_PLACE = ("segments", "fulltext", "vectors")
# The files a writer opens for writing beside them (the lock, SQLite's).
# Other files at the top are not asked about: a file someone else left in
# the store must not stop every writer.
_WRITER_FILES = ("LOCK", "state.db", "state.db-wal", "state.db-shm")


class StoreNotWritable(TraceError):
    """exit 1: the store is sound; the user cannot write it."""


def unwritable(store: Path) -> str | None:
    """Why this user cannot write the store at `store` (None: they can).
    A store not made yet needs its nearest existing parent writable. Uses
    access(2): root passes unless the file system is mounted read-only."""
    if not os.path.lexists(store):
        parent = store.parent
        while not os.path.lexists(parent) and parent != parent.parent:
            parent = parent.parent
        return _why_not(parent, "to create the store in")
    paths = [store]
    try:
        with os.scandir(store) as entries:
            for entry in entries:
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir or entry.name in _WRITER_FILES:
                    paths.append(Path(entry.path))
                if is_dir and entry.name in _WRITTEN_IN_PLACE:
                    with os.scandir(entry.path) as inner:
                        paths.extend(Path(e.path) for e in inner)
    except OSError as exc:
        return f"{store} cannot be listed ({exc.strerror or exc})"
    for path in paths:
        why = _why_not(path)
        if why:
            return why
    return None


def _why_not(path: Path, purpose: str = "") -> str | None:
    if os.path.islink(path):              # its target is what counts (TRACE makes no links; damage checks name them)
        return None
    if os.access(path, os.W_OK) or not os.path.lexists(path):    # (gone since listed: a writer's temp file)
        return None
    if _read_only_mount(path):
        return f"{path} is on a read-only file system"
    return f"{path} is not writable by you{' ' + purpose if purpose else ''}"


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def not_writable_error(store: Path, why: str) -> StoreNotWritable:
    """The one line: what is not writable and how to fix it."""
    if "read-only file system" in why:
        fix = "remount it read-write, or copy the store to a writable place and point --store at the copy"
    else:
        fix = (f"give yourself write access (`chmod -R u+w {store}`, or run as the user who owns it), or "
               f"copy the store to a place you can write and point --store at the copy")
    return StoreNotWritable(f"the store {store} is not writable ({why}); TRACE writes to its store even to "
                            f"read it (locks, SQLite's shared memory): {fix}")


def require_writable(store: Path) -> None:
    why = unwritable(store)
    if why:
        raise not_writable_error(store, why)
