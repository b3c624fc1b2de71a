"""Damaged derived files: found before anything reads them, rebuilt from the log.

Only segments/ and artifacts/ are ground truth. The full-text index,
the vector index, state.db and cache/ are derived: a damaged one must
never crash a command, print an engine's panic, or change an answer
silently. It is rebuilt from the log instead, and `trace verify`
reports it apart from damage to the log itself.

Each index's files are recorded when they are committed (`checksums.json`
beside them: size, mtime and sha256 of every file the index reads). The
checks come at three depths:

  STAT   every reader (recall): a stat per recorded file; SQLite files
         must begin with SQLite's header;
  OPEN   every writer: STAT, plus SQLite files opened and, up to 8 MiB,
         put through SQLite's quick_check;
  FULL   `trace verify`: every recorded file's sha256, quick_check always,
         every cache file's checksum.

A write through the file system changes a file's mtime, so STAT sees any
file rewritten since the commit that recorded it. Damage that keeps both
size and mtime (a bit flipped by the disk) is for FULL to find. A file
whose mtime alone changed (copied without its times) is hashed at OPEN
and FULL: the same bytes are not damage, and a writer records its new time."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path

import orjson

from stores.hit_records import FILE as HIT_RECORDS
from stores.integrity.json_record import ABSENT, read_record
from stores.integrity.regular_files import open_regular, read_regular

SUMS = "checksums.json"
STAT, OPEN, FULL = 1, 2, 3
SQLITE_HEADER = b"SQLite format 3\x00"
QUICK_CHECK_MAX_BYTES = 8 << 20     # writers run quick_check on SQLite files up to this size (~100 ms)
_CHUNK = 1 << 20
_SQLITE_SIDE = ("-journal", "-wal", "-shm")
_SQLITE_FILES = ("positions.db",)
_TANTIVY_LOCKS = (".tantivy-writer.lock", ".tantivy-meta.lock")
_TANTIVY_FILE = re.compile(r"meta\.json|[0-9a-f]{32}(\.\d+)?\.[a-z]+")


@dataclass(frozen=True)
class Damage:
    part: str          # "fulltext", "vectors", "state" or "cache": what a repair rebuilds
    where: str         # the file or folder, relative to the store
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.why}"


# -- recording -------------------------------------------------------------------

def seal_fulltext(store: Path, directory: Path | None = None) -> None:
    """Record the full-text index's files as committed (the caller holds the
    writer lock and has just committed): meta.json, positions.db and the
    files of every segment meta.json names. positions.db's record is for
    verify only (FULL): a crash mid-transaction leaves a journal that
    rewrites it on the next open, with nothing wrong."""
    directory = directory or store / "fulltext"
    try:
        meta = orjson.loads(read_regular(directory / "meta.json"))
        segments = {s["segment_id"].replace("-", "") for s in meta.get("segments") or ()}
    except (OSError, orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        return                                     # nothing committed to vouch for
    names = ["meta.json", "positions.db", HIT_RECORDS] + sorted(n for n in os.listdir(directory)
                                                                if n.split(".", 1)[0] in segments)
    _write_sums(directory, names, rewritten=("meta.json", "positions.db", HIT_RECORDS))


def changed_since_sealed(directory: Path, name: str) -> bool:
    """Whether a recorded file's size or mtime differs from its record (a
    write after the last seal: damage, or a commit cut short before it)."""
    try:
        old = (_read_sums(directory) or {}).get(name)
        st = os.stat(directory / name)
    except (ValueError, OSError):
        return False
    return old is not None and (old[0] != st.st_size or old[1] != st.st_mtime_ns)


def seal_vectors(store: Path) -> None:
    """Record the vector index's files as committed."""
    directory = store / "vectors"
    if directory.is_dir():
        _write_sums(directory, [n for n in ("meta.json", "hnsw.bin") if (directory / n).is_file()],
                    rewritten=("meta.json", "hnsw.bin"))


def _write_sums(directory: Path, names: list[str], rewritten: tuple[str, ...]) -> None:
    """Record `names`. A file recorded before keeps its record unless it is
    one the engine rewrites (`rewritten`): the others are written once, so
    a change to one is damage, and re-recording it would hide it."""
    try:
        before = _read_sums(directory) or {}
    except ValueError:
        before = {}
    files = {}
    for name in names:
        try:
            st = os.stat(directory / name)
        except FileNotFoundError:
            continue
        old = before.get(name)
        same = old is not None and old[0] == st.st_size and old[1] == st.st_mtime_ns
        if old is not None and not same and name not in rewritten:
            files[name] = old
            continue
        files[name] = [st.st_size, st.st_mtime_ns, old[2] if same else _sha256(directory / name)]
    _store_sums(directory, files)


def _read_sums(directory: Path) -> dict | None:
    """{name: [size, mtime_ns, sha256]}, None when there is no record, or
    raises ValueError when the record itself is damaged."""
    data, unreadable = read_record(directory / SUMS)
    if unreadable:
        raise ValueError(unreadable)
    if data is ABSENT:
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(
            isinstance(v, list) and len(v) == 3 and type(v[0]) is int and type(v[1]) is int and isinstance(v[2], str)
            for v in files.values()):
        raise ValueError("is not a checksum record")
    return files


# -- checking ------------------------------------------------------------------------

def fulltext_damage(store: Path, depth: int = STAT) -> list[Damage]:
    directory = store / "fulltext"
    found = _folder_damage(store, "fulltext", directory, depth)
    if found or not directory.is_dir():
        return found
    why = sqlite_problem(directory / "positions.db", depth)
    if why:
        found.append(Damage("fulltext", "fulltext/positions.db", why))
    for lock in _TANTIVY_LOCKS:              # Tantivy opens them to write: a folder or a link there stops every writer
        if _not_a_file(directory / lock):
            found.append(Damage("fulltext", f"fulltext/{lock}", "is not a regular file (Tantivy's lock file)"))
    if _not_a_file(directory / ".managed.json"):     # Tantivy reads it at open: a named pipe there waits forever
        found.append(Damage("fulltext", "fulltext/.managed.json", "is not a regular file (Tantivy's list of its files)"))
    if depth >= OPEN and not _file_list(directory / ".managed.json"):
        # Tantivy's list of its files (rewritten whenever it makes one, so
        # not recorded by stat): it must still read as that list.
        found.append(Damage("fulltext", "fulltext/.managed.json", "is not Tantivy's list of its files"))
    return found


def _not_a_file(path: Path) -> bool:
    """Something other than a regular file stands at `path` (nothing: False)."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _file_list(path: Path) -> bool:
    try:
        names = orjson.loads(read_regular(path))
    except FileNotFoundError:
        return True
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(names, list) and all(isinstance(n, str) and _TANTIVY_FILE.fullmatch(n) for n in names)


def vectors_damage(store: Path, depth: int = STAT) -> list[Damage]:
    directory = store / "vectors"
    found = _folder_damage(store, "vectors", directory, depth)
    if found or not directory.is_dir():
        return found
    why = vector_meta_problem(directory / "meta.json")
    if why:
        found.append(Damage("vectors", "vectors/meta.json", why))
    return found


def state_damage(store: Path, depth: int = OPEN) -> list[Damage]:
    why = sqlite_problem(store / "state.db", depth)
    return [Damage("state", "state.db", why)] if why else []


def cache_damage(store: Path) -> list[Damage]:
    """Cache files that are not what save_cache wrote (verify's check; a
    load rebuilds such a file by itself)."""
    from stores.context.cache_file import cache_file_problem
    directory = store / "cache"
    if directory.is_symlink():
        return [Damage("cache", "cache/", "is a symbolic link (TRACE never makes one)")]
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        if name.endswith(".json"):
            why = cache_file_problem(directory / name)
            if why:
                found.append(Damage("cache", f"cache/{name}", why))
    return found


def derived_damage(store: Path, depth: int = FULL) -> list[Damage]:
    return (fulltext_damage(store, depth) + vectors_damage(store, depth) + state_damage(store, depth)
            + cache_damage(store))


def _folder_damage(store: Path, part: str, directory: Path, depth: int) -> list[Damage]:
    found = _recorded_files_damage(part, directory, depth)
    if found and depth != OPEN:
        from stores.log.lock import writer_at_work
        if writer_at_work(store):          # mid-commit, not damaged: the writer records them when done
            return []
        # A writer may have committed, recorded and left between our reading
        # the record and the files (verify hashes for a while): read both again.
        found = _recorded_files_damage(part, directory, depth)
        if found and writer_at_work(store):
            return []
    return found


def _recorded_files_damage(part: str, directory: Path, depth: int) -> list[Damage]:
    if directory.is_symlink():
        return [Damage(part, f"{part}/", "is a symbolic link (TRACE never makes one)")]
    if not directory.exists():
        return []
    if not directory.is_dir():
        return [Damage(part, f"{part}/", "is not a folder")]
    try:
        sums = _read_sums(directory)
    except ValueError as exc:
        return [Damage(part, f"{part}/{SUMS}", str(exc))]
    if sums is None:
        return []                                  # written before checksums were kept: the next commit records them
    found, copied = [], {}
    for name, (size, mtime_ns, digest) in sums.items():
        if name in _SQLITE_FILES and (depth < FULL or (directory / f"{name}-journal").exists()):
            continue                               # SQLite's own checks cover it until verify
        if name == HIT_RECORDS and depth < FULL:
            continue                               # each record carries its CRC: readers check what they read
        path = directory / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            found.append(Damage(part, f"{part}/{name}", "is missing"))
            continue
        if not stat.S_ISREG(st.st_mode):
            found.append(Damage(part, f"{part}/{name}", "is not a regular file"))
        elif st.st_size != size:
            found.append(Damage(part, f"{part}/{name}", f"is {st.st_size} bytes, not the {size} written"))
        elif st.st_mtime_ns != mtime_ns:
            # A copy that did not keep times (cp -r, a restored backup) has
            # the same bytes: below STAT their checksum vouches for them.
            if depth >= OPEN and _sha256(path) == digest:
                copied[name] = [size, st.st_mtime_ns, digest]
            else:
                found.append(Damage(part, f"{part}/{name}", "was changed after it was written"))
        elif depth >= FULL and _sha256(path) != digest:
            found.append(Damage(part, f"{part}/{name}", "does not match its checksum"))
    if copied and depth == OPEN:                   # a writer: record their new times, hashed once
        _store_sums(directory, {**sums, **copied})
    return found


def _store_sums(directory: Path, files: dict) -> None:
    """Write the record {name: [size, mtime_ns, sha256]} in one replace."""
    tmp = directory / f".{SUMS}.tmp"
    tmp.write_bytes(orjson.dumps({"schema": 1, "files": files}))
    os.replace(tmp, directory / SUMS)


def sqlite_problem(path: Path, depth: int) -> str | None:
    """Why a SQLite file TRACE derived cannot be used (None: sound or absent)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link (TRACE never makes one)"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    for suffix in _SQLITE_SIDE:               # SQLite opens these beside it: a folder there makes it read-only
        if _not_a_file(path.with_name(path.name + suffix)):
            return f"has a {suffix} beside it that is not a regular file"
    if st.st_size == 0:
        return "is empty (TRACE writes its tables as it creates it: cut short)"
    with os.fdopen(open_regular(path), "rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(SQLITE_HEADER):
        return "is not a SQLite database (damaged)"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1) or st.st_size % page:
        return "is cut short or padded (not a whole number of database pages)"
    if depth < OPEN:
        return None
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if depth >= FULL or st.st_size <= QUICK_CHECK_MAX_BYTES:
                verdict = db.execute("PRAGMA quick_check").fetchone()
                if not verdict or verdict[0] != "ok":
                    return f"fails SQLite's check ({verdict[0] if verdict else 'no answer'})"
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return f"cannot be read ({exc})"
    return None


_VECTOR_META = {"schema": int, "embedder": str, "dim": int, "M": int, "ef_construction": int, "seq": int,
                "count": int, "capacity": int}


def vector_meta_problem(path: Path) -> str | None:
    meta, unreadable = read_record(path)
    if meta is ABSENT:
        return unreadable
    if not isinstance(meta, dict):
        return "is not the vector index's description"
    for name, kind in _VECTOR_META.items():
        if name in meta and type(meta[name]) is not kind:
            return f"{name} is not a {kind.__name__}"
    if meta.get("dim", 1) < 1 or meta.get("count", 0) < 0:
        return "holds impossible sizes"
    return None


# -- repairing ---------------------------------------------------------------------

def discard(store: Path, damage: list[Damage]) -> None:
    """Remove damaged derived files so the next writer rebuilds them from the
    log (the caller holds the writer lock). A symbolic link is removed, never
    what it points to."""
    for part in dict.fromkeys(d.part for d in damage):
        if part == "state":
            for suffix in ("", *_SQLITE_SIDE):
                _remove(store / f"state.db{suffix}")         # (a folder made where the file belongs too)
        elif part == "cache":
            for d in damage:
                if d.part == "cache":
                    _remove(store / d.where.rstrip("/"))
        else:
            _remove(store / part)


def _remove(path: Path) -> None:
    """Whatever stands at `path`: a file, a link, a named pipe, a folder."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    from hashlib import sha256         # only a full check hashes: a recall's quick check does not load OpenSSL
    digest = sha256()
    with os.fdopen(open_regular(path), "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# -- while a writer holds the store (stores/store.py) ------------------------------------

@contextlib.contextmanager
def derived_write_failure(what: str):
    """Everything is in the log already: a derived file that cannot be
    written (a full disk) is one clear line, and catches up next time."""
    from stores.errors import TraceError
    try:
        yield
    except TraceError:
        raise
    except (OSError, ValueError, RuntimeError) as exc:
        raise TraceError(f"{what} could not be saved ({exc}); every event is in the log and they catch up "
                         f"from it on the next run (free space first if the disk is full)") from exc


@contextlib.contextmanager
def damage_named_when_met(store: Path):
    """A SQLite file that breaks mid-command (damage deeper than the opening
    checks look) is removed so the next command rebuilds it from the log;
    this one ends with one clear line."""
    from stores.errors import TraceError
    try:
        yield
    except sqlite3.DatabaseError as exc:
        damage = state_damage(store, FULL) + [d for d in fulltext_damage(store, FULL) if d.where.endswith(".db")]
        if not damage:
            if isinstance(exc, sqlite3.OperationalError):      # a full disk, a read-only file system
                raise TraceError(f"state.db or the index bookkeeping could not be written ({exc}); every event "
                                 f"appended is in the log: free space and run it again") from exc
            raise
        discard(store, damage)
        raise TraceError(f"{damage[0]} ({exc}): removed; it is rebuilt from the log by the next command, "
                         f"so run this one again") from exc
