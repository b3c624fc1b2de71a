"""Recall's faster paths give exactly what the plain ones give.

- Candidates measured in one pass: the neighbours' query also gives each
  candidate the IDF of the query terms it holds, and locates the vector
  hits when the lexical hits fill the anchors. That must find what the
  separate queries (held_idf, lookup) find: the same candidates with the
  same numbers, so hits, order and scores do not move.
- Stored vectors read from the HNSW file where they lie must be hnswlib's
  own (get_items), for present and absent seqs alike; a process's first
  search, a scan of them, finds what the graph finds."""
from __future__ import annotations

import json

import pytest

from stores.index.fulltext_search import Filters
from stores.recall import Recaller, RecallQuery
from stores.recall.recaller import NEIGHBOUR_ANCHORS
from stores.store import Store
from trace_cli.bench.needles import build_session


@pytest.fixture(scope="module")
def recaller(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-pass")
    sessions = [build_session(turns=150, needles=6, flood_words=60, seed=s, tag=f"s{s}", distractors=True,
                              long_output_words=400 if s == 2 else 0) for s in range(3)]
    with open(root / "sessions.jsonl", "w") as f:
        for s in sessions:
            f.write(json.dumps({"messages": s.messages}) + "\n")
    store = Store(root / "store")
    assert sum(r.added for r in store.ingest([str(root / "sessions.jsonl")])) >= 3 * 150 * 4
    rc = Recaller(store)
    rc.prepare("hybrid")
    rc.vectors.search(rc.vectors.embedder().embed_query("warm up"), 1)     # later searches use the graph
    return rc, [n for s in sessions for n in s.needles]


def _numbers(cands: dict) -> dict:
    return {seq: (c.gp, c.kind, c.ts_ms, c.bm25, c.held, c.window, c.cosine, c.chars, c.speaker_key, c.segment, c.offset)
            for seq, c in cands.items()}


def _both_ways(rc: Recaller, query: str, mode: str, filters: Filters) -> tuple[dict, dict, int]:
    from reducers.terms import exact_query_terms, query_words
    qterms = rc.fulltext.query_terms(query_words(query), exact_query_terms(query))
    qvec = rc.vectors.embedder().embed_query(query) if mode == "hybrid" else None
    rc._held = {}
    separate = rc.gather(qterms, qvec, filters, mode, hop=1)              # held_idf and lookup, as queries of their own
    rc.measure(separate, qterms, qvec)
    rc._held = {}
    one_pass = rc.gather(qterms, qvec, filters, mode, hop=1, held_terms=qterms)
    rc.measure(one_pass, qterms, qvec)
    return _numbers(separate), _numbers(one_pass), sum(c.bm25 > 0 for c in separate.values())


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
def test_one_pass_finds_the_same_candidates_with_the_same_numbers(recaller, mode):
    rc, needles = recaller
    lexical_counts = []
    for filters in (Filters(), Filters(kinds=["user", "assistant"]), Filters(kinds=["tool_result"])):
        for n in needles:
            separate, one_pass, lexical = _both_ways(rc, n.query, mode, filters)
            assert one_pass == separate, (n.query, filters)
            lexical_counts.append(lexical)
    # both ways of locating the vector hits were taken: after the anchors, and with them
    assert min(lexical_counts) < NEIGHBOUR_ANCHORS <= max(lexical_counts)


def test_every_candidate_is_measured_against_its_window_too(recaller):
    """measure fills each candidate's window (the query's IDF it or its
    neighbours hold): never less than what it holds itself, and more for
    the lines next to a match that say nothing of the query."""
    rc, needles = recaller
    from reducers.terms import exact_query_terms, query_words
    lifted = 0
    for n in needles:
        qterms = rc.fulltext.query_terms(query_words(n.query), exact_query_terms(n.query))
        rc._held = {}
        cands = rc.gather(qterms, None, Filters(), "fulltext", hop=1, held_terms=qterms)
        rc.measure(cands, qterms, None)
        assert all(c.window >= c.held - 1e-6 for c in cands.values()), n.query
        lifted += sum(c.window > c.held + 1e-6 for c in cands.values())
    assert lifted > 0


def test_hits_are_the_same_when_held_is_measured_apart(recaller, monkeypatch):
    rc, needles = recaller
    for mode in ("fulltext", "hybrid"):
        queries = [RecallQuery(query=n.query, k=10, mode=mode) for n in needles]
        together = [[(h.seq, h.score, h.scores) for h in rc.recall(q)] for q in queries]
        plain_gather = Recaller.gather
        monkeypatch.setattr(Recaller, "gather", lambda self, *a, held_terms=None, **k: plain_gather(self, *a, **k))
        apart = [[(h.seq, h.score, h.scores) for h in rc.recall(q)] for q in queries]
        monkeypatch.undo()
        assert together == apart


def test_optional_clauses_chained_score_as_a_union_of_them_does(recaller, monkeypatch):
    """The lexical query's common terms (and the neighbours' held terms)
    are optional clauses chained onto the required part instead of a
    union of Shoulds beside it (stores/index/tantivy_queries.py scored_by):
    the same events with the same scores, to the last bit."""
    import tantivy

    import stores.index.fulltext_search as fs
    rc, needles = recaller
    monkeypatch.setattr(fs, "COMMON_MIN_DOCS", 20)      # a small index has common terms too
    monkeypatch.setattr(fs, "COMMON_SHARE", 0.01)

    def union(required, optional):
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, required)] +
                                           [(tantivy.Occur.Should, q) for q in optional]) if optional else required

    from reducers.terms import exact_query_terms, query_words
    ft, chained_any = rc.fulltext, 0
    for n in needles:
        terms = ft.query_terms(query_words(n.query + " the file test run"), exact_query_terms(n.query))
        common = [t for t in terms if t.df > ft._common_df(ft.num_docs())]
        chained_any += len(common) > 1
        chained = [(h.seq, h.score) for h in ft.lexical(terms, None, 100, cover=1.0, ctx_boost=0.0)]
        with monkeypatch.context() as m:
            m.setattr(fs, "scored_by", union)
            plain = [(h.seq, h.score) for h in ft.lexical(terms, None, 100, cover=1.0, ctx_boost=0.0)]
        assert chained == plain, n.query
    assert chained_any                                  # the chain was taken


def test_stored_vectors_read_from_the_file_are_hnswlibs_own(recaller):
    import numpy as np

    from stores.index.vectors import VectorIndex
    rc, _ = recaller
    seqs = list(range(0, 2000, 3)) + [10 ** 9]                 # embedded ones, tool events (never embedded), absent
    fast = VectorIndex(rc.store.dir)
    assert fast._rows() is not None
    got = fast.vectors_for(seqs)
    plain = VectorIndex(rc.store.dir)
    plain._rows_read = ()                                       # as if the layout were unknown: hnswlib's get_items
    want = plain.vectors_for(seqs)
    assert 0 < len(want) < len(seqs) and list(got) == list(want)
    assert all(got[s].dtype == np.float32 and np.array_equal(got[s], want[s]) for s in want)


def test_cosines_at_once_are_each_vectors_own_dot_product(recaller):
    from stores.index.vectors import VectorIndex
    rc, _ = recaller
    seqs = list(range(0, 2000, 3)) + [10 ** 9]
    query = rc.vectors.embedder().embed_query("which build failed on the release branch")
    fast, plain = VectorIndex(rc.store.dir), VectorIndex(rc.store.dir)
    plain._rows_read = ()                                       # hnswlib's get_items
    for index in (fast, plain):
        one_by_one = {s: float(v @ query) for s, v in index.vectors_for(seqs).items()}
        at_once = index.cosines(seqs, query)
        assert one_by_one and list(at_once) == list(one_by_one)
        assert all(at_once[s] == one_by_one[s] for s in one_by_one)     # equal floats, not close ones


def test_an_unexpected_hnsw_file_layout_falls_back_to_hnswlib(recaller, tmp_path):
    import shutil

    from stores.index.vectors import VectorIndex
    rc, _ = recaller
    copy = tmp_path / "store"
    shutil.copytree(rc.store.dir / "vectors", copy / "vectors")
    with open(copy / "vectors" / "hnsw.bin", "r+b") as f:
        f.seek(32)                                              # label_offset: no longer vector end
        f.write((7).to_bytes(8, "little"))
    assert VectorIndex(copy)._rows() is None


def test_a_vector_graph_that_reaches_fewer_than_k_answers_with_what_it_reaches(tmp_path):
    """hnswlib raises when its graph yields fewer than k neighbours (islands
    of identical texts at 1M events did); the search answers with the most
    it can give instead of failing the query (which recall took for a
    damaged index and rebuilt)."""
    import numpy as np

    from stores.index.vectors import VectorIndex

    class Islands:                     # a graph whose entry reaches 7 elements
        def get_current_count(self):
            return 1000

        def set_ef(self, ef):
            pass

        def knn_query(self, vector, k):
            if k > 7:
                raise RuntimeError("Cannot return the results in a contiguous 2D array")
            return (np.arange(1, k + 1, dtype=np.uint64)[None, :],
                    np.linspace(0.1, 0.7, 7, dtype=np.float32)[None, :k])

    index = VectorIndex(tmp_path)
    index._meta = {"count": 1000}
    index._index = Islands()
    hits = index.search(np.ones(4, dtype=np.float32), 100)
    assert [seq for seq, _ in hits] == [1, 2, 3, 4, 5, 6, 7]
    assert hits[0][1] == pytest.approx(0.9) and hits[-1][1] == pytest.approx(0.3)


def test_a_process_first_lookup_asks_hnswlib_then_the_file_rows_with_the_same_floats(recaller, monkeypatch):
    import numpy as np

    from stores.index.vectors import VectorIndex
    rc, needles = recaller
    laid_out = _calls(monkeypatch, "_level0_rows")
    index = VectorIndex(rc.store.dir)
    for _ in range(2):                                          # a second search loads hnswlib's index
        index.search(index.embedder().embed_query(needles[0].query), 10)
    seqs = list(range(0, 2000, 3)) + [10 ** 9]
    first = index.vectors_for(seqs)
    assert not laid_out                                         # hnswlib's get_items answered
    second = index.vectors_for(seqs)
    assert laid_out                                             # then the file's rows
    assert 0 < len(first) < len(seqs) and list(first) == list(second)
    assert all(np.array_equal(first[s], second[s]) and first[s].dtype == np.float32 for s in first)


def test_a_process_first_search_scans_the_stored_vectors_then_uses_the_graph(recaller):
    """A one-query process (a hook, a script) does not load the graph: its
    search scores every stored vector where it lies, exactly. A second
    search loads the graph, which is approximate (and built on two threads,
    so not the same graph twice): it finds nearly the same neighbours, each
    with the same cosine, and never a nearer one than the exact scan."""
    from stores.index.vectors import VectorIndex
    rc, needles = recaller
    for needle in needles[:6]:
        index = VectorIndex(rc.store.dir)
        qvec = index.embedder().embed_query(needle.query)
        scanned = index.search(qvec, 10)
        assert index._index is None
        searched = index.search(qvec, 10)
        assert index._index is not None
        exact, graph = dict(scanned), dict(searched)
        assert len(exact.keys() & graph.keys()) >= 8
        assert all(abs(exact[s] - graph[s]) < 1e-5 for s in exact.keys() & graph.keys())
        assert all(a >= b - 1e-5 for (_, a), (_, b) in zip(scanned, searched))      # rank by rank
        assert [c for _, c in scanned] == sorted((c for _, c in scanned), reverse=True)


def test_a_file_laid_out_otherwise_is_searched_through_the_graph(recaller, monkeypatch):
    from stores.index import vectors as vectors_module
    from stores.index.vectors import VectorIndex
    rc, needles = recaller
    monkeypatch.setattr(vectors_module, "_level0_block", lambda *a: ())     # another hnswlib's layout
    index = VectorIndex(rc.store.dir)
    found = index.search(index.embedder().embed_query(needles[0].query), 10)
    assert index._index is not None and len(found) == 10


def test_a_scan_and_the_row_lookups_after_it_map_the_file_once(recaller, monkeypatch):
    from stores.index.vectors import VectorIndex
    rc, needles = recaller
    mapped = _calls(monkeypatch, "_level0_block")
    index = VectorIndex(rc.store.dir)
    found = index.search(index.embedder().embed_query(needles[0].query), 10)     # scans
    assert index._index is None and len(index.vectors_for([s for s, _ in found])) == len(found)
    assert len(mapped) == 1


def _calls(monkeypatch, name: str) -> list:
    """A list that grows by one each time stores.index.vectors' `name` is called."""
    from stores.index import vectors as vectors_module
    calls, real = [], getattr(vectors_module, name)
    monkeypatch.setattr(vectors_module, name, lambda *a: calls.append(1) or real(*a))
    return calls

