"""The sweep's files and how they change together.

    ledger.jsonl      decisions: the latest per key plus a bounded tail
    knowledge.jsonl   facts, one per key (live or tombstoned), with history
    episodes.jsonl    episodes (derived from the log)
    tuning.json       reflection's term boosts, which recall reads
    sweep/state.json  the watermark and what the next sweep resumes from
    sweep/runs.jsonl  one line per run (wall time, counts, model spend)
    SWEEP.LOCK        one sweep (or revert, or repair) at a time

A sweep changes several of them at once, and killing it at any point must
leave either the old set or the new set, never a mix: `Commit` writes each
new file beside its target (`NAME.new`, fsynced), then renames a journal
naming them into place — the commit point — then renames each file over
its target and removes the journal. `recover` (run before anything reads
them for writing) finishes a commit whose journal exists and removes
staged files whose journal never made it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

import orjson

from stores.paths import ensure_dir, fsync_dir

LEDGER = "ledger.jsonl"
KNOWLEDGE = "knowledge.jsonl"
EPISODES = "episodes.jsonl"
TUNING = "tuning.json"
SWEEP_DIR = "sweep"
STATE = f"{SWEEP_DIR}/state.json"
RUNS = f"{SWEEP_DIR}/runs.jsonl"
JOURNAL = f"{SWEEP_DIR}/commit.json"
SPOOL = f"{SWEEP_DIR}/episodes.spool"
LOCK = "SWEEP.LOCK"
STAGED = ".new"
_MANAGED = (LEDGER, KNOWLEDGE, EPISODES, TUNING, STATE)


def write_atomic(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace `path` whole: write a temp file, fsync, rename, fsync the directory."""
    ensure_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    _write(tmp, chunks)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _write(path: Path, chunks: Iterable[bytes]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(fd)
    finally:
        os.close(fd)


def jsonl(rows: Iterable[dict]) -> Iterable[bytes]:
    for row in rows:
        yield orjson.dumps(row) + b"\n"


def read_jsonl(path: Path) -> Iterator[dict]:
    """The JSON objects of a file, one per line; a line that is not one is
    passed over (callers that must report damage read the lines themselves)."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        for line in f:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield row


def append_line(path: Path, row: dict) -> None:
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, orjson.dumps(row) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


class Commit:
    """Stage files, then install them all or none."""

    def __init__(self, store: Path):
        self.store = store
        self.staged: list[str] = []

    def stage(self, name: str, chunks: Iterable[bytes]) -> None:
        assert name in _MANAGED, name
        target = self.store / name
        ensure_dir(target.parent)
        _write(target.with_name(target.name + STAGED), chunks)
        self.staged.append(name)

    def commit(self) -> None:
        if not self.staged:
            return
        for name in {str(Path(n).parent) for n in self.staged}:
            fsync_dir(self.store / name)
        write_atomic(self.store / JOURNAL, [orjson.dumps({"files": self.staged})])    # the commit point
        _install(self.store, self.staged)


def _install(store: Path, names: list[str]) -> None:
    for name in names:
        target = store / name
        staged = target.with_name(target.name + STAGED)
        if staged.exists():
            os.replace(staged, target)
            fsync_dir(target.parent)
    (store / JOURNAL).unlink(missing_ok=True)
    fsync_dir(store / SWEEP_DIR)


def recover(store: Path) -> str | None:
    """Finish or undo an interrupted commit; says which, or None."""
    journal = store / JOURNAL
    if journal.exists():
        try:
            names = [n for n in orjson.loads(journal.read_bytes()).get("files", []) if n in _MANAGED]
        except (orjson.JSONDecodeError, AttributeError):
            names = None
        if names is not None:
            _install(store, names)
            return "finished an interrupted sweep's commit"
        journal.unlink()                 # a journal torn before its rename never committed
    (store / SPOOL).unlink(missing_ok=True)          # a killed sweep's closed episodes: redone by the rerun
    dropped = False
    for name in (*_MANAGED, JOURNAL):
        target = store / name
        for leftover in (target.with_name(target.name + STAGED), target.with_name(target.name + ".tmp")):
            if name == JOURNAL and leftover.name.endswith(STAGED):
                continue
            if leftover.exists():
                leftover.unlink()
                dropped = True
    return "dropped an interrupted sweep's uncommitted files" if dropped else None
