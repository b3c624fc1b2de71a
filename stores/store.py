"""`Store`: the Python API over one store directory.

    from trace_cli import Store
    store = Store()                      # TRACE_HOME / XDG default, or Store("/path")
    for result in store.ingest(["~/.claude/projects"]): ...
    store.stats(); store.verify(); list(store.events())
    store.recall("gateway port", k=3); store.show("1..5"); store.sessions()

The command methods (recall, compact, context, show, export, sessions,
state, notes, sweep, facts, ledger, revert, digest, record_calls, replay,
diff) are in stores/api/commands.py.

Reading needs no lock. Writing happens inside `store.writer(wait=…)`,
which holds the exclusive lock, recovers a torn tail, and brings the
derived state up to the log before anything is appended."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from stores.api.commands import CommandMethods
from stores.log.artifacts import ArtifactStore
from stores.errors import IntegrityError, TraceError
from stores.paths import clear_tmp, ensure_dir, private_umask, store_dir, tighten
from stores.log.segments import iter_events, list_segments


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
        """Whether a store is here. segments/ and artifacts/ hold the only
        copy of the history: something else where either folder belongs
        is an integrity failure, never "no store"."""
        for folder in (self.segments_dir, self.dir / "artifacts"):
            if os.path.lexists(folder) and not folder.is_dir():
                what = "a symbolic link that leads to no folder" if folder.is_symlink() else "a file"
                raise IntegrityError(f"{folder} is {what}, not the store's {folder.name}/ folder, which holds the only "
                                     f"copy of the history: put the folder back (from a backup) and run this again")
        return self.segments_dir.is_dir()

    def require(self) -> None:
        if not self.exists():
            raise TraceError(f"no TRACE store at {self.dir}; create one with `trace ingest PATH` "
                             f"(or point --store / TRACE_HOME at an existing store)")

    # -- writing -----------------------------------------------------------

    @contextlib.contextmanager
    def writer(self, wait: float = 0.0, embed: bool = True, embedder: str | None = None,
               rebuild_fulltext: bool = False, rebuild_vectors: bool = False, accept_changed_log: bool = False,
               discard_first=(), lost: list[tuple[int, int]] = ()) -> Iterator[Writer]:
        """Hold the store for writing. Opening it recovers a torn tail,
        removes what a killed writer left (half-written artifacts, tmp/, a
        half-built index), refuses a log changed behind TRACE's back
        (stores/integrity/seals.py) unless `accept_changed_log`, rebuilds
        damaged derived files and brings them up to the log. `discard_first`
        (damage verify found) is removed before anything opens it; `lost`
        (seq ranges verify found missing) is acknowledged with the rest."""
        # Imported here: readers (a cold `trace recall`) never pay for the write path.
        from stores.log.event_log import EventLog
        from stores.index.indexes import DerivedIndexes
        from stores.ingest_state import IngestState
        from stores.integrity.derived import OPEN, damage_named_when_met, derived_write_failure, discard, state_damage
        from stores.integrity.log_identity import another_log
        from stores.integrity.seals import check_before_append, seal
        from stores.log.lock import WriterLock
        from stores.integrity.access import require_writable
        require_writable(self.dir)                          # else SQLite's refusals would read as damage
        with private_umask():
            ensure_dir(self.dir)
            self.exists()                                   # raises when segments/ or artifacts/ is no folder
            lock = WriterLock(self.dir).acquire(wait)
            closing = contextlib.ExitStack()
            try:
                tighten(self.dir, self.warn)
                log = EventLog(self.dir, warn=self.warn)
                closing.push(_closer(log.close))
                self.artifacts.sweep_incoming()             # a killed writer's half-written artifact
                clear_tmp(self.dir)                         # ...and its spills and stdin spool
                discard(self.dir, list(discard_first))
                damage = state_damage(self.dir, OPEN)
                for d in damage:
                    self.warn(f"{self.dir}/{d}: state.db is rebuilt from the log")
                discard(self.dir, damage)
                state = IngestState(self.dir)
                closing.push(_closer(state.close))
                foreign = another_log(self.dir, state.identity())
                if foreign:                                 # its seals would read as this log rewritten
                    self.warn(f"{self.dir}/state.db {foreign}; it is rebuilt from this store's log")
                    state.reset()
                log_changed = check_before_append(self, log, state, accept_changed_log, list(lost))
                indexes = DerivedIndexes(self.dir, note=self.warn, embed=embed, embedder=embedder,
                                         lock_fd=lock.fd)
                closing.push(_closer(indexes.close))
                indexes.force_rebuild = rebuild_fulltext or log_changed       # they hold what the log no longer does
                indexes.force_rebuild_vectors = rebuild_vectors or log_changed
                with damage_named_when_met(self.dir):
                    state.catch_up(self.segments_dir, log.tail.seq)
                    with derived_write_failure("the indexes"):
                        indexes.catch_up(log.tail.seq)
                    yield Writer(self, log, state, indexes)
                    log.wait_durable()
                    with derived_write_failure("the indexes"):
                        indexes.commit(log.tail.seq)
                    seal(self.segments_dir, state)
            finally:
                try:
                    closing.close()
                finally:
                    lock.release()

    def append_hooks(self, writer: Writer) -> list[Callable[[list[dict], list[tuple[int, int]], dict[int, str]], None]]:
        """Derived indexes that follow every append."""
        return [writer.indexes.on_append]

    # -- reading -----------------------------------------------------------

    def events(self, start_seq: int | None = None, end_seq: int | None = None, *,
               conformed: bool = True) -> Iterator[dict]:
        """The log's events in order, as readers that derive things from them
        see them: a malformed line an older version wrote has its wrong-typed
        fields read as neutral values (reducers/event_schema.conform);
        `conformed=False` gives every line exactly as written."""
        return iter_events(self.segments_dir, start_seq, end_seq, conformed=conformed)

    def segments(self):
        return list_segments(self.segments_dir)

    def ingest(self, paths: list[str], **options):
        """Add transcripts (files, folders, or "-" for stdin) to the log; one
        IngestResult per input, yielded as each is done. Options are
        stores/ingest/run.py's (format, session, strict, embed, wait, …)."""
        from stores.ingest.run import ingest
        return ingest(self, paths, **options)

    def index(self, wait: float = 0.0, embedder: str | None = None):
        """Bring every derived index up to the log (the cron job for
        `ingest --no-embed`); an IndexResult: watermarks before and after."""
        return self._indexed(wait=wait, embed=True, embedder=embedder)

    def reindex(self, wait: float = 0.0, embedder: str | None = None):
        """Rebuild the full-text and vector indexes from the log. The new
        full-text index is built beside the old one, which answers recall
        until the new one takes its place."""
        return self._indexed(wait=wait, embed=True, embedder=embedder, rebuild_fulltext=True, rebuild_vectors=True)

    def _indexed(self, **writer_options):
        import time

        from stores.api.results import IndexResult
        before, t = self.index_status(), time.perf_counter()
        with self.writer(**writer_options):
            pass                                  # opening a writer brings the indexes up to the log
        return IndexResult(before=before, after=self.index_status(), seconds=round(time.perf_counter() - t, 3))

    def index_status(self) -> dict:
        from stores.index.fulltext import FulltextIndex
        from stores.log.segments import tail_seq
        from stores.index.vectors import VectorIndex
        ft, vec = FulltextIndex(self.dir), VectorIndex(self.dir)
        status = {"log_seq": tail_seq(self.segments_dir) if self.exists() else 0,
                  "fulltext_seq": ft.watermark, "vector_seq": vec.watermark,
                  "vectors": vec.count, "embedder": vec.meta().get("embedder"), "dim": vec.meta().get("dim")}
        ft.close()
        return status

    def stats(self):
        """Events by kind and session, segments, bytes and artifacts (Stats)."""
        from stores.stats import stats
        return stats(self)

    def verify(self, check_artifacts: bool = True, check_indexes: bool = True):
        """Re-derive every hash and check every derived file (VerifyReport;
        its exit_code is the command's: 0, 5 for the log, 6 for derived files)."""
        from stores.verify import verify
        return verify(self, check_artifacts=check_artifacts, check_indexes=check_indexes)


def _closer(close: Callable[[], None]):
    """An exit callback that closes, and whose own failure never hides the
    error already on its way out (a full disk fails the close as well)."""
    def exit_(exc_type, exc, tb) -> bool:
        try:
            close()
        except Exception:
            if exc_type is None:
                raise
        return False
    return exit_
