"""`Store`: the Python API over one store directory.

    from trace_cli import Store
    store = Store()                      # TRACE_HOME / XDG default, or Store("/path")
    for result in store.ingest(["~/.claude/projects"]): ...
    store.stats(); store.verify(); list(store.events())

Reading needs no lock. Writing happens inside `store.writer(wait=…)`,
which holds the exclusive lock, recovers a torn tail, and brings the
derived state up to the log before anything is appended."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from stores.artifacts import ArtifactStore
from stores.errors import TraceError
from stores.paths import clear_tmp, ensure_dir, private_umask, store_dir, tighten
from stores.segments import iter_events, list_segments


class Writer:
    """What a writer holds while the lock is theirs."""

    def __init__(self, store: "Store", log, state, indexes):
        self.store = store
        self.log = log
        self.state = state
        self.indexes = indexes
        self.artifacts = ArtifactStore(store.dir)


class Store:
    def __init__(self, path: str | os.PathLike | None = None, *,
                 warn: Callable[[str], None] | None = None):
        self.dir = store_dir(path)
        self.warn = warn or (lambda msg: None)

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
        from stores.event_log import EventLog
        from stores.indexes import DerivedIndexes
        from stores.ingest_state import IngestState
        from stores.integrity.derived import OPEN, discard, state_damage
        from stores.lock import WriterLock
        with private_umask():
            ensure_dir(self.dir)
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
                lost_events = self._check_log(log, state, accept_changed_log, list(lost))
                indexes = DerivedIndexes(self.dir, note=self.warn, embed=embed, embedder=embedder,
                                         lock_fd=lock.fd)
                closing.push(_closer(indexes.close))
                indexes.force_rebuild = rebuild_fulltext or lost_events       # they still hold what was lost
                indexes.force_rebuild_vectors = rebuild_vectors or lost_events
                with _derived_damage_named(self):
                    state.catch_up(self.segments_dir, log.tail.seq)
                    with _derived_write_failure("the indexes"):
                        indexes.catch_up(log.tail.seq)
                    yield Writer(self, log, state, indexes)
                    log.wait_durable()
                    with _derived_write_failure("the indexes"):
                        indexes.commit(log.tail.seq)
                    self._seal(log, state)
            finally:
                try:
                    closing.close()
                finally:
                    lock.release()

    def _check_log(self, log, state, accept: bool, lost: list[tuple[int, int]]) -> bool:
        """Refuse to append onto a log that no longer matches its seals; with
        `accept`, acknowledge what it lost (a loss record naming the seqs,
        which are never used again) and trust it as it is. True when events
        were lost (the indexes must be rebuilt without them)."""
        from stores.event_log import note_lost_events
        from stores.integrity.seals import LogChanged, check_log
        seals = state.seals()
        keys_seq = state.keys_seq
        if not seals and keys_seq == 0:
            keys_seq = _index_reach(self.dir)          # state.db is new: the indexes are the evidence left
        findings = check_log(self.segments_dir, log.tail.seq, keys_seq, seals)
        lost = sorted(set(lost) | set(findings.lost))
        if not findings and not lost:
            return False
        if not accept:
            raise LogChanged(findings)
        for problem in findings.problems:
            self.warn(f"accepted: {problem}")
        if lost:
            for first, last in lost:
                noted = note_lost_events(self.dir, first, last, "acknowledged by a writer told to accept the change")
            self.warn(f"events {', '.join(f'{a}..{b}' for a, b in lost)} are gone from the log; noted in {noted} "
                      f"and in the log itself, and their seqs will not be used again")
        state.reset()
        state.catch_up(self.segments_dir, log.tail.seq)
        self._append_loss_records(log, state, lost, findings.problems)
        self._seal(log, state)
        return bool(lost)

    def _append_loss_records(self, log, state, lost: list[tuple[int, int]], problems: list[str]) -> None:
        """The log itself keeps what was accepted: a record per lost range
        (verify reads it as acknowledging the gap), and one naming the other
        changes, so a rewrite accepted once is still on record."""
        from reducers.drafts import Draft
        from stores.appender import Appender
        from stores.integrity.seals import LOST_KIND, LOST_SESSION, accepted_record_text, lost_record_text
        if lost:
            log.reserve(max(b for _, b in lost))
        after = log.tail.seq
        drafts = [Draft(kind=LOST_KIND, text=lost_record_text(a, b, "segments removed or cut"),
                        session_id=LOST_SESSION, key=f"trace/lost/{a}-{b}/after-{after}",
                        meta={"lost": [a, b]}) for a, b in lost]
        others = [p for p in problems if " is missing" not in p and "gone from" not in p
                  and "the log ends at seq" not in p]
        if others:
            drafts.append(Draft(kind=LOST_KIND, text=accepted_record_text(others), session_id=LOST_SESSION,
                                key=f"trace/accepted/after-{after}", meta={"accepted": others[:100]}))
        if drafts:
            Appender(log, state, self.artifacts, redact_secrets=False).append_drafts(
                drafts, source_format="trace", source_path="trace verify --repair")

    def _seal(self, log, state) -> None:
        from stores.integrity.seals import current_seals
        state.record_seals(current_seals(self.segments_dir, state.seals()))

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
        """Rebuild the full-text and vector indexes from the log. The new
        full-text index is built beside the old one, which answers recall
        until the new one takes its place."""
        before = self.index_status()
        with self.writer(wait=wait, embed=True, embedder=embedder, rebuild_fulltext=True, rebuild_vectors=True):
            pass
        return {"before": before, "after": self.index_status()}

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


def _index_reach(store_dir: Path) -> int:
    """How far the full-text index says the log reached (0 when it is
    missing or damaged: then it vouches for nothing)."""
    from stores.fulltext import FulltextIndex
    from stores.integrity.derived import fulltext_damage
    if fulltext_damage(store_dir):
        return 0
    ft = FulltextIndex(store_dir)
    try:
        return max(ft.watermark, 0)
    finally:
        ft.close()


@contextlib.contextmanager
def _derived_write_failure(what: str):
    """Everything is in the log already: a derived file that cannot be
    written (a full disk) is one clear line, and catches up next time."""
    try:
        yield
    except TraceError:
        raise
    except (OSError, ValueError, RuntimeError) as exc:
        raise TraceError(f"{what} could not be saved ({exc}); every event is in the log and they catch up "
                         f"from it on the next run (free space first if the disk is full)") from exc


@contextlib.contextmanager
def _derived_damage_named(store: Store):
    """A SQLite file that breaks mid-command (damage deeper than the opening
    checks look) is removed so the next command rebuilds it from the log;
    this one ends with one clear line."""
    import sqlite3
    try:
        yield
    except sqlite3.DatabaseError as exc:
        from stores.integrity.derived import FULL, discard, fulltext_damage, state_damage
        damage = state_damage(store.dir, FULL) + [d for d in fulltext_damage(store.dir, FULL)
                                                   if d.where.endswith(".db")]
        if not damage:
            if isinstance(exc, sqlite3.OperationalError):      # a full disk, a read-only file system
                raise TraceError(f"state.db or the index bookkeeping could not be written ({exc}); every event "
                                 f"appended is in the log: free space and run it again") from exc
            raise
        discard(store.dir, damage)
        raise TraceError(f"{damage[0]} ({exc}): removed; it is rebuilt from the log by the next command, "
                         f"so run this one again") from exc
