"""The vector index (hnswlib, cosine, `vectors/`): derived from the log.

Labels are event seqs. `meta.json` records the embedder, dimension and
HNSW parameters the index was built with and the watermark (last seq
considered); an index built with another embedder or dimension is rebuilt,
never mixed. Not every event is embedded (see `embeddable`): tool calls,
system prompts and tiny texts carry little meaning for a dense model and
would only slow ingest, which vector indexing bounds.

What to embed was chosen by measurement (`trace bench recall`, LoCoMo dev):
see EMBED_KINDS and stores/index/embedders.py EMBED_MAX_CHARS.

Saved with a temp file and a rename after each writer session, meta last,
so a crash leaves the previous index and watermark intact."""
from __future__ import annotations

import os
import struct
from pathlib import Path

import orjson

from reducers.recall_block import strip_recalled
from stores.index.hnsw_file import HEADER, hnsw_problem
from stores.integrity.regular_files import read_regular

SCHEMA_VERSION = 3             # 3: texts embedded with their accents folded (stores/index/embedders.py)
# Dialogue, notes and task state carry meaning a dense model can match by
# paraphrase; tool output (code, logs, listings) is found by its exact terms
# and BM25, and embedding it would cost a third of ingest for little gain.
EMBED_KINDS = frozenset({"user", "assistant", "note", "task_state", "persona"})
MIN_CHARS = 12
# Chosen by measurement (trace bench recall, LoCoMo dev): see README "Recall".
DEFAULT_DIM = 128
DEFAULT_M = 12
DEFAULT_EF_CONSTRUCTION = 64
DEFAULT_EF_SEARCH = 96
SCAN_ROWS = 65_536              # vectors scored at a time by a scan (a bounded copy of strided rows)


def embeddable(event: dict) -> bool:
    return event["kind"] in EMBED_KINDS and len((event.get("text") or "").strip()) >= MIN_CHARS


def embedding_text(event: dict) -> str:
    tool = event.get("tool") or {}
    text = strip_recalled(event.get("text") or "")          # recalled once, never found again as new
    return f"{tool['name']}: {text}" if tool.get("name") else text


class DamagedGraph(ValueError):
    """hnsw.bin's graph is not sound: hnswlib must not load it."""


class VectorIndex:
    def __init__(self, store: Path, embedder_name: str | None = None):
        self.dir = store / "vectors"
        self.path = self.dir / "hnsw.bin"
        self.meta_path = self.dir / "meta.json"
        self.embedder_name = embedder_name
        self._index = None
        self._embedder = None
        self._dirty = False
        self._meta: dict | None = None
        self._block = None              # _level0(): hnsw.bin's level-0 records mapped, or () when unreadable
        self._rows_read = None          # _rows(): (vectors, labels, order), or () when unreadable
        self._looked_up = False         # vectors_for() has answered before
        self._searched = False          # search() has answered before
        self._graph_sound = False       # graph_problem() found hnsw.bin's links sound

    # -- bookkeeping ---------------------------------------------------------

    def meta(self) -> dict:
        if self._meta is None:
            try:
                meta = orjson.loads(read_regular(self.meta_path))
            except (OSError, orjson.JSONDecodeError):
                meta = None
            # missing, unreadable (a file where vectors/ belongs) or not an object:
            # an index to rebuild, which `trace verify` names as derived damage
            self._meta = meta if type(meta) is dict else {}
        return self._meta

    def set_aside(self) -> None:
        """Treat the index as empty (damaged files not rebuilt yet): queries
        answer by full text alone, and nothing is read from the files."""
        self._meta = {}

    def older_schema(self) -> tuple[int, int] | None:
        """(the schema this index was built with, the one this TRACE
        builds) when another TRACE built it; None when it is current."""
        built = self.meta().get("schema")
        return (built, SCHEMA_VERSION) if built is not None and built != SCHEMA_VERSION else None

    @property
    def watermark(self) -> int:
        """Last seq considered, or -1 when missing/unusable/foreign."""
        m = self.meta()
        if m.get("schema") != SCHEMA_VERSION or not self.path.exists() and m.get("count", 0) > 0:
            return -1
        if self.embedder_name and m.get("embedder") != self.embedder_name:
            return -1
        return int(m.get("seq", -1))

    @property
    def count(self) -> int:
        return int(self.meta().get("count", 0))

    def embedder(self):
        if self._embedder is None:
            from stores.index.embedders import load_embedder
            name = self.meta().get("embedder") or self.embedder_name or _default_embedder()
            self._embedder = load_embedder(name, self.meta().get("dim"))
        return self._embedder

    def graph_problem(self) -> str | None:
        """Why hnswlib must not load hnsw.bin (bytes the disk changed keep
        its size and time: hnswlib would walk damaged links out of its
        arrays, a segmentation fault), else None."""
        if self._graph_sound or not (self.path.exists() and self.meta().get("count", 0) > 0):
            return None
        why = hnsw_problem(self.path, int(self.meta().get("dim") or 0))
        self._graph_sound = why is None
        return why

    def _load(self):
        if self._index is None:
            import hnswlib
            m = self.meta()
            index = hnswlib.Index(space="cosine", dim=m["dim"])
            if (why := self.graph_problem()) is not None:
                raise DamagedGraph(f"vectors/hnsw.bin {why}: `trace verify --repair` rebuilds it from the log")
            if self.path.exists() and m.get("count", 0) > 0:
                index.load_index(str(self.path), max_elements=max(m.get("capacity", 0), m["count"]))
            else:
                index.init_index(max_elements=max(m.get("capacity", 1024), 1024), M=m["M"],
                                 ef_construction=m["ef_construction"])
            index.set_ef(m.get("ef_search", DEFAULT_EF_SEARCH))
            self._index = index
        return self._index

    # -- writing (under the store's writer lock) ----------------------------------

    def reset(self, embedder_name: str | None = None) -> None:
        name = embedder_name or self.embedder_name or _default_embedder()
        dim = int(os.environ.get("TRACE_VECTOR_DIM", DEFAULT_DIM)) if name == "wordllama" else 256
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        self._meta = {"schema": SCHEMA_VERSION, "embedder": name, "dim": dim, "M": DEFAULT_M,
                      "ef_construction": DEFAULT_EF_CONSTRUCTION, "ef_search": DEFAULT_EF_SEARCH,
                      "seq": 0, "count": 0, "capacity": 1024}
        self._index = None
        self._embedder = None
        self._write_meta()

    def add(self, events: list[dict]) -> int:
        """Embed and insert the embeddable events; returns how many."""
        chosen = [e for e in events if embeddable(e)]
        if not chosen:
            return 0
        import numpy as np
        vectors = self.embedder().embed([embedding_text(e) for e in chosen])
        keep = np.linalg.norm(vectors, axis=1) > 0
        if not keep.any():
            return 0
        vectors = vectors[keep]
        labels = np.array([e["seq"] for e, k in zip(chosen, keep) if k], dtype=np.uint64)
        index = self._load()
        needed = index.get_current_count() + len(labels)
        if needed > index.get_max_elements():
            index.resize_index(max(needed, int(index.get_max_elements() * 1.5)))
        index.add_items(vectors, labels, num_threads=2)
        self._dirty = True
        return len(labels)

    def commit(self, seq: int) -> None:
        m = self.meta()
        if self._dirty:
            index = self._load()
            tmp = self.path.with_suffix(".tmp")
            index.save_index(str(tmp))
            os.replace(tmp, self.path)
            m["count"] = index.get_current_count()
            m["capacity"] = index.get_max_elements()
            self._dirty = False
        m["seq"] = seq
        self._write_meta()

    def _write_meta(self) -> None:
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(self.meta()))
        os.replace(tmp, self.meta_path)

    # -- reading ---------------------------------------------------------------

    def search(self, vector, k: int) -> list[tuple[int, float]]:
        """The k stored vectors nearest `vector`: (seq, cosine), best first."""
        if self.count == 0:
            return []
        first, self._searched = not self._searched, True
        if first and self._index is None:
            found = self._scan(vector, k)
            if found is not None:
                return found
        try:
            index = self._load()
        except DamagedGraph:                 # its links, not its rows: an exact scan is still safe
            return self._scan(vector, k) or []
        k = min(k, index.get_current_count())
        index.set_ef(max(k, self.meta().get("ef_search", DEFAULT_EF_SEARCH)))
        try:
            labels, distances = index.knn_query(vector, k=k)
        except RuntimeError:
            labels, distances = _fewer(index, vector, k)
        # tolist(): the same ints and floats at once, not a numpy scalar per element
        return [(label, 1.0 - d) for label, d in zip(labels[0].tolist(), distances[0].tolist())]

    def _scan(self, vector, k: int) -> list[tuple[int, float]] | None:
        """A process's first search scores every stored vector where it
        lies in hnsw.bin (memory-mapped) instead of loading the graph:
        exact, and cheaper than hnswlib's load for one query (~15 ms
        against ~100 ms at 100k events, ~0.1 s against ~1 s at 1M). A
        process that searches again loads the graph then (~1 ms a search
        there against ~30 ms a scan at 1M). None when the file's layout is
        not the one expected."""
        import numpy as np
        block = self._level0()
        if not block:
            return None
        rows, _, label_at = block
        vectors = _vectors_of(block)
        q = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        if norm > 0:
            q = q / norm                     # hnswlib's cosine space normalises the query too
        scores = np.empty(len(vectors), dtype=np.float32)
        for at in range(0, len(vectors), SCAN_ROWS):
            np.dot(vectors[at:at + SCAN_ROWS], q, out=scores[at:at + SCAN_ROWS])
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        labels = np.ascontiguousarray(rows[top, label_at:label_at + 8]).view(np.uint64).ravel()
        order = np.lexsort((labels, -scores[top]))          # best first; ties by seq
        return [(int(labels[i]), float(scores[top[i]])) for i in order]

    def vectors_for(self, seqs: list[int]) -> dict[int, object]:
        """Stored vectors of the given seqs (those that were embedded)."""
        present, vectors = self._gathered(seqs)
        return dict(zip(present, vectors))

    def cosines(self, seqs: list[int], vector) -> dict[int, float]:
        """The cosine of each given seq's stored vector (those embedded) to
        `vector` (normalised, as the stored ones are). One np.vecdot call:
        it takes each row's dot product with the same BLAS routine as
        `row @ vector` (the same floats, bit for bit, where a matrix
        product sums in another order), without a call per row."""
        import numpy as np
        present, vectors = self._gathered(seqs)
        return dict(zip(present, np.vecdot(vectors, vector).tolist())) if present else {}

    def _gathered(self, seqs: list[int]) -> tuple[list[int], object]:
        """(the given seqs that have a stored vector, their vectors as one
        float32 matrix in that order)."""
        if self.count == 0 or not seqs:
            return [], ()
        import numpy as np
        # The first lookup of a process asks hnswlib when its index is loaded
        # (a second search loaded it): laying out the file's rows (labels
        # read, argsorted) costs more than one lookup (3 ms at 100k events,
        # 60 ms at 1M). A process whose one search scanned the file has no
        # graph to ask and lays them out from the mapping the scan made.
        rows = self._rows() if self._looked_up or self._index is None else None
        self._looked_up = True
        if rows is not None:
            vectors, labels, order = rows
            wanted = np.asarray(seqs, dtype=np.uint64)
            at = order[np.minimum(np.searchsorted(labels, wanted, sorter=order), len(order) - 1)]
            held = labels[at] == wanted
            present = [s for s, ok in zip(seqs, held.tolist()) if ok]
            return present, np.array(vectors[at[held]], dtype=np.float32)
        index = self._load()
        try:
            present = list(seqs)
            vecs = index.get_items(present)
        except RuntimeError:                 # some were never embedded: ask one by one
            present = [s for s in seqs if _has_label(index, s)]
            if not present:
                return [], ()
            vecs = index.get_items(present)
        return present, np.asarray(vecs, dtype=np.float32)

    def _rows(self):
        """(vectors, labels, label order) read from hnsw.bin where it lies,
        or None when its layout is not the one expected. hnswlib's
        get_items cost ~10 µs a vector (~1.2 ms a hybrid query at 1M
        events); the same stored (normalised) floats sit in the file's
        level-0 block, one fixed-size record per element: the vector at
        offset_data, the label (the event's seq) after it."""
        if self._rows_read is None:
            self._rows_read = _level0_rows(self._level0())
        return self._rows_read or None

    def _level0(self):
        """hnsw.bin's level-0 records, mapped once for the scan and the rows."""
        if self._block is None:
            self._block = _level0_block(self.path, self.meta())
        return self._block

    def close(self) -> None:
        self._index = None
        self._block = None
        self._rows_read = None


def _level0_block(path: Path, meta: dict):
    """(hnsw.bin's level-0 records as a memory-mapped count × record-size
    byte array, the vector's offset in a record, the label's), or () when
    the file is not laid out as expected."""
    import numpy as np
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
        off0, _, count, size, label_at, vec_at, *_ = HEADER.unpack_from(data, 0)
    except (OSError, ValueError, struct.error):
        return ()
    dim = int(meta.get("dim") or 0)
    if (off0 != 0 or count != meta.get("count") or count == 0 or label_at != vec_at + 4 * dim
            or size != label_at + 8 or data.size < HEADER.size + count * size):
        return ()
    return data[HEADER.size:HEADER.size + count * size].reshape(count, size), vec_at, label_at


def _vectors_of(block):
    """The stored vectors of a level-0 block, in place (a strided view)."""
    import numpy as np
    rows, vec_at, label_at = block
    return rows[:, vec_at:label_at].view(np.float32)


def _level0_rows(block):
    """See VectorIndex._rows; () when the block is ()."""
    import numpy as np
    if not block:
        return ()
    rows, _, label_at = block
    labels = np.ascontiguousarray(rows[:, label_at:label_at + 8]).view(np.uint64).ravel()
    return _vectors_of(block), labels, np.argsort(labels, kind="stable")


def _fewer(index, vector, k: int):
    """The most neighbours (fewer than `k`) the graph yields from its entry
    point. hnswlib raises instead of answering with fewer than k: a graph
    whose level 0 splits into small islands (many identical texts make
    neighbour lists of one) reaches fewer than k from where a search
    enters, however wide its beam. The largest k that answers is found by
    halving the gap (a few more searches, on this path only)."""
    import numpy as np
    lo, hi, best = 0, k, (np.zeros((1, 0), dtype=np.uint64), np.zeros((1, 0), dtype=np.float32))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            best, lo = index.knn_query(vector, k=mid), mid
        except RuntimeError:
            hi = mid
    return best


def _has_label(index, seq: int) -> bool:
    try:
        index.get_items([seq])
        return True
    except RuntimeError:
        return False


def _default_embedder() -> str:
    return os.environ.get("TRACE_EMBEDDER", "wordllama")
