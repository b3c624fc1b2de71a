"""Which log a state.db describes, so one copied in from another store is
named as that, not as this log rewritten.

state.db's seals name the hash each segment ended with; a state.db copied
from another store names hashes this log never had, which on their own
read as "the log was rewritten, hashes and all" (exit 5). Two records tell
the cases apart: the hash of the log's first event (a log's own, as long as
seq 1 is in it) and the store folder's device and inode. A state.db whose
first-event hash and folder are both another's belongs to another log: it
is derived, so it is rebuilt from this one. The same folder with another
first event is this log rewritten from its start: the seals' finding
stands. A state.db from before these records (or a log whose seq 1 was
lost) vouches for neither, and is judged by its seals alone."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from stores.log.segments import list_segments, sealed_event

FIRST_HASH = "log_first_hash"
FOLDER = "store_folder"


def current_identity(store: Path) -> dict[str, str]:
    """This store's records: its folder, and its first event's hash when
    seq 1 is in the log."""
    found = {FOLDER: _folder(store)}
    first = _first_hash(store / "segments")
    if first:
        found[FIRST_HASH] = first
    return found


def recorded_identity(store: Path) -> dict[str, str]:
    """What state.db recorded, read without writing (empty when it has no
    record or cannot be read: then it vouches for nothing)."""
    path = store / "state.db"
    if not path.is_file():
        return {}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return read_identity(db)
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def read_identity(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT name, value FROM meta WHERE name IN (?, ?)", (FIRST_HASH, FOLDER)))


def another_log(store: Path, recorded: dict[str, str]) -> str | None:
    """Why state.db's records are another log's (None: this log's, or no
    record to tell)."""
    if FIRST_HASH not in recorded or FOLDER not in recorded:
        return None
    now = current_identity(store)
    if FIRST_HASH not in now or now[FIRST_HASH] == recorded[FIRST_HASH] or now[FOLDER] == recorded[FOLDER]:
        return None
    return (f"belongs to another log (it was written in another store folder, for a log whose first event is "
            f"{recorded[FIRST_HASH][:12]}…; this log's is {now[FIRST_HASH][:12]}…): copied from another store?")


def _folder(store: Path) -> str:
    st = os.stat(store)
    return f"{st.st_dev}:{st.st_ino}"


def _first_hash(segments_dir: Path) -> str | None:
    segments = list_segments(segments_dir) if segments_dir.is_dir() else []
    if not segments or segments[0].first_seq != 1:
        return None
    try:
        with open(segments[0].path, "rb") as f:
            event = sealed_event(f.readline())
    except OSError:
        return None
    return str(event["hash"]) if event and event.get("seq") == 1 else None
