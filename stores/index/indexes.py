"""The derived indexes, kept in step with the log.

`DerivedIndexes` is what a writer holds beside the log: it feeds every
appended batch to the full-text index (synchronously: an event is findable
the moment `ingest` returns) and to the vector index (unless embedding is
deferred), commits them when the writer closes, and on open brings any
index that lags the log — or is missing, corrupt, or of an older schema —
back up to date from the log itself, with a note on stderr."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable, Iterator

from reducers.event_schema import conform
from stores.log.artifacts import ArtifactStore
from stores.errors import UsageError
from stores.index.fulltext import INDEX_MAX_CHARS, FulltextIndex
from stores.index.fulltext_documents import index_rows
from stores.index.fulltext_process import IndexerFailed, IndexerProcess, handoff_after
from stores.integrity.derived import OPEN, Damage, discard, fulltext_damage, seal_fulltext, seal_vectors, vectors_damage
from stores.paths import exchange
from stores.log.segments import iter_log_lines, list_segments, segments_from, writer_pass
from stores.index.vectors import VectorIndex

CATCH_UP_BATCH = 5000
REBUILDING = "fulltext.rebuilding"   # a new full-text index being built beside the one in use
EMBEDDERS = ("wordllama", "hash")


def iter_located(segments_dir: Path, start_seq: int) -> Iterator[tuple[dict, tuple[int, int]]]:
    """(event, (segment first seq, byte offset)) from start_seq on."""
    segments = segments_from(list_segments(segments_dir), start_seq)
    firsts = {seg.path: seg.first_seq for seg in segments}
    for raw, event in iter_log_lines(segments, on_damaged=writer_pass):   # a torn last line passed over too
        if event["seq"] >= start_seq:
            yield conform(event), (firsts[raw.segment], raw.offset)


def artifact_texts(artifacts: ArtifactStore, events: list[dict], known: dict[int, str] | None = None) -> dict[int, str]:
    """The searchable prefix of each artifact-backed event's full content;
    `known` (seq -> content) saves reading back what the caller holds."""
    out = {}
    for e in events:
        art = e.get("artifact")
        if not art:
            continue
        if known and e["seq"] in known:
            out[e["seq"]] = _indexable(known[e["seq"]][:INDEX_MAX_CHARS])
            continue
        chunks, size = [], 0
        try:
            for chunk in artifacts.iter_bytes(art["id"]):
                chunks.append(chunk)
                size += len(chunk)
                if size >= INDEX_MAX_CHARS:
                    break
        except Exception:          # a missing artifact is verify's finding; index the preview
            continue
        out[e["seq"]] = b"".join(chunks)[:INDEX_MAX_CHARS].decode("utf-8", "ignore")
    return out


def _indexable(text: str) -> str:
    """Text as it reads back from the artifact: lone surrogates dropped."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "ignore")


class DerivedIndexes:
    """`embed=False` defers vectors (ingest --no-embed): they catch up later
    in `trace index`, or in recall for a bounded tail."""

    def __init__(self, store: Path, note: Callable[[str], None], embed: bool = True,
                 embedder: str | None = None, lock_fd: int | None = None):
        if embedder is not None and embedder not in EMBEDDERS:
            raise UsageError(f"unknown --embedder {embedder!r}; choose one of: {', '.join(EMBEDDERS)}")
        self.store = store
        self.note = note
        self.embed = embed
        for leftover in (REBUILDING, "fulltext.old"):     # a rebuild a killed writer did not finish
            shutil.rmtree(store / leftover, ignore_errors=True)
        self.fulltext = FulltextIndex(store)
        self.vectors = VectorIndex(store, embedder)
        self.artifacts = ArtifactStore(store)
        self.force_rebuild = False
        self.force_rebuild_vectors = False
        self._dirty = False
        self._worker = None
        self._queue = None
        self._worker_error: BaseException | None = None
        self._lock_fd = lock_fd
        self._appended = 0
        self._handoff_after = handoff_after()
        self._indexer: IndexerProcess | None = None
        self._indexer_failed = False

    def catch_up(self, log_seq: int) -> int:
        """Bring the full-text index up to the log (and the vectors too,
        unless embedding is deferred); returns events indexed."""
        done = self._catch_up_fulltext(log_seq)
        if self.embed:
            self.catch_up_vectors(log_seq)
        return done

    def catch_up_vectors(self, log_seq: int, damage: list[Damage] | None = None) -> int:
        """Embed events past the vector watermark (rebuilding the index
        first when it is damaged); returns how many events were considered."""
        vec = self.vectors
        if damage is None:
            damage = [] if self.force_rebuild_vectors else vectors_damage(self.store, OPEN)
            if not damage and not self.force_rebuild_vectors and 0 <= vec.watermark < log_seq:
                damage = self._graph_damage()         # adding loads the graph: its links are checked first
        for d in damage:
            self.note(f"{d}: the vector index is rebuilt from the log")
        if damage:
            discard(self.store, damage)
            vec.close()
            vec._meta = None
        watermark = vec.watermark
        if watermark < 0 or watermark > log_seq or damage or self.force_rebuild_vectors:
            if vec.meta() and not damage and not self.force_rebuild_vectors:
                older = vec.older_schema()
                self.note(f"vector index of an older TRACE (schema {older[0]}, this one builds {older[1]}): "
                          "rebuilding it from the log" if older else
                          "vector index missing, outdated or built with another embedder: rebuilding it")
            vec.reset()
            self.force_rebuild_vectors = False
            watermark = 0
        if watermark >= log_seq:
            return 0
        done, batch = 0, []
        for event, _ in iter_located(self.store / "segments", watermark + 1):
            if event["seq"] > log_seq:           # (a rebuild mid-ingest stops before the batch being added)
                break
            batch.append(event)
            if len(batch) >= CATCH_UP_BATCH:
                vec.add(batch)
                done += len(batch)
                batch = []
        vec.add(batch)
        done += len(batch)
        vec.commit(log_seq)
        seal_vectors(self.store)
        return done

    def _catch_up_fulltext(self, log_seq: int) -> int:
        ft = self.fulltext
        damage = [] if self.force_rebuild else fulltext_damage(self.store, OPEN)
        for d in damage:
            self.note(f"{d}: the full-text index is rebuilt from the log")
        watermark = -1 if damage else ft.watermark
        if watermark < 0 or watermark > log_seq or (watermark > 0 and ft.open() is None) or self.force_rebuild:
            if log_seq > 0 and not damage and not self.force_rebuild:
                self.note("full-text index missing, damaged or outdated: rebuilding it from the log")
            self.force_rebuild = False
            return self._rebuild_fulltext(log_seq)
        if watermark >= log_seq:
            return 0
        ft.drop_after(watermark)
        done = self._index_from(ft, watermark + 1)
        ft.commit(log_seq)
        seal_fulltext(self.store)
        return done

    def _rebuild_fulltext(self, log_seq: int) -> int:
        """Build a new index beside the one in use, then swap them: readers
        keep answering from the old one meanwhile, and a failure or a crash
        leaves it in place (the half-built one is removed by the next writer)."""
        self.fulltext.close()
        aside = FulltextIndex(self.store, REBUILDING)
        aside.reset()
        done = self._index_from(aside, 1) if log_seq > 0 else 0
        aside.commit(log_seq)
        aside.close()
        seal_fulltext(self.store, aside.dir)
        exchange(aside.dir, self.fulltext.dir)
        shutil.rmtree(aside.dir, ignore_errors=True)       # (now the old index)
        self.fulltext = FulltextIndex(self.store)
        return done

    def _index_from(self, ft: FulltextIndex, start_seq: int) -> int:
        done, batch, locations = 0, [], []
        for event, loc in iter_located(self.store / "segments", start_seq):
            batch.append(event)
            locations.append(loc)
            if len(batch) >= CATCH_UP_BATCH:
                ft.add(index_rows(batch, locations, artifact_texts(self.artifacts, batch)))
                done += len(batch)
                batch, locations = [], []
        ft.add(index_rows(batch, locations, artifact_texts(self.artifacts, batch)))
        return done + len(batch)

    def on_append(self, events: list[dict], locations: list[tuple[int, int]],
                  known_texts: dict[int, str] | None = None) -> None:
        if not events:
            return
        if self.embed and self.vectors.watermark >= 0:
            self._embed_async(events)
        self._appended += len(events)
        self._dirty = True
        if self._indexer is None and self._should_hand_off():
            self._hand_off(events[0]["seq"] - 1)
        if self._indexer is None and self._indexer_failed:
            return                                  # commit catches the index up from the log
        rows = index_rows(events, locations, artifact_texts(self.artifacts, events, known_texts))
        if self._indexer is None:
            self.fulltext.add(rows)
            return
        try:
            self._indexer.add(rows)
        except IndexerFailed as exc:
            self._indexer_gone(exc)

    # -- the indexer process (stores/index/fulltext_process.py) -----------------------

    def _should_hand_off(self) -> bool:
        return (self._handoff_after is not None and self._appended > self._handoff_after
                and not self._indexer_failed and self.fulltext.usable())

    def _hand_off(self, indexed_seq: int) -> None:
        """Commit what this process indexed, then let a child go on from there."""
        self.fulltext.commit(indexed_seq)
        self.fulltext.close()
        try:
            self._indexer = IndexerProcess(self.store, self._lock_fd)
        except OSError as exc:
            self.note(f"could not start the full-text indexer process ({exc}); indexing in this one")
            self._handoff_after = None

    def _indexer_gone(self, exc: IndexerFailed) -> None:
        """Stop a failed child; commit catches the index up from the log."""
        self.note(f"the full-text indexer process stopped ({exc}); the index will catch up from the log")
        self._indexer.abandon()
        self._indexer = None
        self._indexer_failed = True

    def _embed_async(self, events: list[dict]) -> None:
        """Embedding and HNSW inserts run in native code that releases the
        GIL, so a worker thread overlaps them with the parsing, hashing and
        full-text work of the next batch (ingest speed is bounded by vectors
        otherwise). Batches are embedded in order; commit waits for them."""
        if self._worker is None:
            if damage := self._graph_damage():        # the first add loads the graph: rebuilt first if rotted
                self.catch_up_vectors(events[0]["seq"] - 1, damage)
            import queue
            import threading
            self._queue = queue.Queue(maxsize=4)
            self._worker = threading.Thread(target=self._vector_worker, name="trace-vectors", daemon=True)
            self._worker.start()
        if self._worker_error is not None:
            raise self._worker_error
        self._queue.put(events)

    def _graph_damage(self) -> list[Damage]:
        """hnsw.bin's links, checked before hnswlib walks them: bytes the disk
        changed keep the file's size and time, so the stat check misses them."""
        why = self.vectors.graph_problem()
        return [Damage("vectors", "vectors/hnsw.bin", why)] if why else []

    def _vector_worker(self) -> None:
        while True:
            batch = self._queue.get()
            try:
                if batch is None:
                    return
                if self._worker_error is None:
                    self.vectors.add(batch)
            except BaseException as exc:          # surfaced on the next append or at commit
                self._worker_error = exc
            finally:
                self._queue.task_done()

    def _drain_vectors(self) -> None:
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._worker = None
        if self._worker_error is not None:
            error, self._worker_error = self._worker_error, None
            raise error

    def commit(self, log_seq: int) -> None:
        self._drain_vectors()
        if self._indexer is not None:
            indexer, self._indexer = self._indexer, None
            try:
                indexer.commit(log_seq)
                self._dirty = False
            except IndexerFailed as exc:
                self._indexer = indexer
                self._indexer_gone(exc)
        if self._indexer_failed:
            self.fulltext.close()
            self._catch_up_fulltext(log_seq)
            self._indexer_failed = self._dirty = False
        elif self._dirty or self.fulltext.watermark < log_seq:
            self.fulltext.commit(log_seq)
            self._dirty = False
        seal_fulltext(self.store)
        vec = self.vectors
        if self.embed and vec.watermark >= 0:
            vec.commit(log_seq)
            seal_vectors(self.store)

    def close(self) -> None:
        try:
            if self._indexer is not None:           # the writer failed before commit
                self._indexer.abandon()
                self._indexer = None
            self._drain_vectors()
        finally:
            self.fulltext.close()
            self.vectors.close()
