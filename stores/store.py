"""`Store`: the Python API over one store directory.

    from trace_cli import Store
    store = Store()                      # TRACE_HOME / XDG default, or Store("/path")
    for result in store.ingest(["~/.claude/projects"]): ...
    store.stats(); store.verify(); list(store.events())
    store.recall("gateway port", k=3); store.show("1..5"); store.sessions()

The command methods (recall, compact, context, show, export, sessions,
state, notes, sweep, digest, replay) are in stores/api/commands.py.

Reading needs no lock. Writing happens inside `store.writer(wait=…)`,
which holds the exclusive lock, recovers a torn tail, and brings the
derived state up to the log before anything is appended."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from stores.api.commands import CommandMethods
from stores.artifacts import ArtifactStore
from stores.errors import TraceError
from stores.paths import ensure_dir, private_umask, store_dir
from stores.segments import iter_events, list_segments


class Writer:
    """What a writer holds while the lock is theirs."""

    def __init__(self, store: "Store", log, state, indexes):
        self.store = store
        self.log = log
        self.state = state
        self.indexes = indexes
        self.artifacts = ArtifactStore(store.dir)


class Store(CommandMethods):
    def __init__(self, path: str | os.PathLike | None = None, *,
                 warn: Callable[[str], None] | None = None, note: Callable[[str], None] | None = None):
        self.dir = store_dir(path)
        self.warn = warn or (lambda msg: None)
        self.note = note or (lambda msg: None)           # progress worth a line on stderr, silenced by -q

    # -- locations ---------------------------------------------------------

    @property
    def segments_dir(self) -> Path:
        return self.dir / "segments"

    @property
    def artifacts(self) -> ArtifactStore:
        return ArtifactStore(self.dir)

    def exists(self) -> bool:
        return self.segments_dir.is_dir()

    def require(self) -> None:
        if not self.exists():
            raise TraceError(f"no TRACE store at {self.dir}; create one with `trace ingest PATH` "
                             f"(or point --store / TRACE_HOME at an existing store)")

    # -- writing -----------------------------------------------------------

    @contextlib.contextmanager
    def writer(self, wait: float = 0.0, embed: bool = True, embedder: str | None = None,
               rebuild_fulltext: bool = False) -> Iterator[Writer]:
        # Imported here: readers (a cold `trace recall`) never pay for the write path.
        from stores.event_log import EventLog, note_lost_events
        from stores.indexes import DerivedIndexes
        from stores.ingest_state import IngestState
        from stores.lock import WriterLock
        with private_umask():
            ensure_dir(self.dir)
            lock = WriterLock(self.dir).acquire(wait)
            try:
                log = EventLog(self.dir, warn=self.warn)
                self.artifacts.sweep_incoming()             # a killed writer's half-written artifact
                state = IngestState(self.dir)
                indexes = DerivedIndexes(self.dir, note=self.warn, embed=embed, embedder=embedder,
                                         lock_fd=lock.fd)
                indexes.force_rebuild = rebuild_fulltext
                try:
                    if state.keys_seq > log.tail.seq:
                        # The state knows events the log no longer has (its tail
                        # was cut, or a damaged last line quarantined): say so
                        # loudly and durably, then rebuild the state from the log.
                        first, last = log.tail.seq + 1, state.keys_seq
                        noted = note_lost_events(self.dir, first, last)
                        self.warn(f"the log ends at seq {first - 1} but state.db recorded events up to seq {last}: "
                                  f"events {first}..{last} are gone from the log (restore segments/ from a backup "
                                  f"to get them back); noted in {noted}")
                        state.reset()
                    state.catch_up(self.segments_dir, log.tail.seq)
                    indexes.catch_up(log.tail.seq)
                    yield Writer(self, log, state, indexes)
                    indexes.commit(log.tail.seq)
                finally:
                    log.close()
                    state.close()
                    indexes.close()
            finally:
                lock.release()

    def append_hooks(self, writer: Writer) -> list[Callable[[list[dict], list[tuple[int, int]], dict[int, str]], None]]:
        """Derived indexes that follow every append."""
        return [writer.indexes.on_append]

    # -- reading -----------------------------------------------------------

    def events(self, start_seq: int | None = None, end_seq: int | None = None) -> Iterator[dict]:
        return iter_events(self.segments_dir, start_seq, end_seq)

    def segments(self):
        return list_segments(self.segments_dir)

    def ingest(self, paths: list[str], **options):
        from stores.ingest import ingest
        return ingest(self, paths, **options)

    def index(self, wait: float = 0.0, embedder: str | None = None) -> dict:
        """Bring every derived index up to the log (the cron job for
        `ingest --no-embed`); returns watermarks before and after."""
        before = self.index_status()
        with self.writer(wait=wait, embed=True, embedder=embedder):
            pass
        return {"before": before, "after": self.index_status()}

    def reindex(self, wait: float = 0.0, embedder: str | None = None) -> dict:
        """Rebuild the full-text and vector indexes from the log."""
        from stores.lock import WriterLock
        with private_umask():
            ensure_dir(self.dir)
            lock = WriterLock(self.dir).acquire(wait)
            try:
                import shutil
                for name in ("fulltext", "vectors"):
                    shutil.rmtree(self.dir / name, ignore_errors=True)
            finally:
                lock.release()
        return self.index(wait=wait, embedder=embedder)

    def index_status(self) -> dict:
        from stores.fulltext import FulltextIndex
        from stores.recall import _log_tail_seq
        from stores.vectors import VectorIndex
        ft, vec = FulltextIndex(self.dir), VectorIndex(self.dir)
        status = {"log_seq": _log_tail_seq(self) if self.exists() else 0,
                  "fulltext_seq": ft.watermark, "vector_seq": vec.watermark,
                  "vectors": vec.count, "embedder": vec.meta().get("embedder"), "dim": vec.meta().get("dim")}
        ft.close()
        return status

    def stats(self):
        from stores.stats import stats
        return stats(self)

    def verify(self, check_artifacts: bool = True, check_indexes: bool = True):
        from stores.verify import verify
        return verify(self, check_artifacts=check_artifacts, check_indexes=check_indexes)
