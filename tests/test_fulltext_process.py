"""A long ingest hands full-text indexing to a child process
(stores/fulltext_process.py). The index it builds is the one the writer
would have built in process, and a child that fails hands the work back:
the index still ends up holding every event."""
from __future__ import annotations

import subprocess
import sys

import pytest

import stores.fulltext_process as fulltext_process
from stores.fulltext import FulltextIndex
from stores.fulltext_process import batch_ranges
from stores.store import Store
from tests.helpers import openai_conversations

QUERIES = [["config_7_1.yaml"], ["question", "where"], ["find_file"], ["assistant"]]


def _ingest(tmp_path, name: str, after: str, monkeypatch, notes: list | None = None) -> Store:
    monkeypatch.setenv("TRACE_INDEX_PROCESS_AFTER", after)
    src = openai_conversations(tmp_path / "c.jsonl", 300, turns=3, tool_every=2)
    store = Store(tmp_path / name, warn=(notes.append if notes is not None else None))
    results = list(store.ingest([str(src)], embed=False))
    assert sum(r.added for r in results) > 3000
    return store


def _index_view(store: Store) -> tuple[int, int, list]:
    ft = FulltextIndex(store.dir)
    try:
        hits = [[(h.seq, round(h.score, 4), h.pos) for h in ft.search(q, [], limit=20)] for q in QUERIES]
        hits.append([(h.seq, h.pos) for h in ft.search([], ["config_7_1.yaml"], limit=5)])
        return ft.watermark, ft.num_docs(), hits
    finally:
        ft.close()


def test_the_child_builds_the_index_the_writer_would_have_built(tmp_path, monkeypatch):
    in_process = _ingest(tmp_path, "a", "never", monkeypatch)
    handed_off = _ingest(tmp_path, "b", "1000", monkeypatch)      # the first ~1000 in process, the rest in the child
    events = sum(1 for _ in in_process.events())
    a, b = _index_view(in_process), _index_view(handed_off)
    assert a[0] == b[0] == events and a[1] == b[1] == events
    assert a[2] == b[2] and all(a[2])


def test_a_failed_child_hands_the_work_back_and_the_index_still_holds_everything(tmp_path, monkeypatch):
    class DyingIndexer(fulltext_process.IndexerProcess):
        def __init__(self, store, lock_fd):
            self.proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    monkeypatch.setattr("stores.indexes.IndexerProcess", DyingIndexer)
    notes: list[str] = []
    store = _ingest(tmp_path, "s", "0", monkeypatch, notes)
    assert any("indexer process stopped" in n and "status 3" in n for n in notes), notes
    events = sum(1 for _ in store.events())
    watermark, docs, hits = _index_view(store)
    assert watermark == docs == events and all(hits)
    assert store.verify().ok


def test_a_batch_is_sent_as_one_range_per_segment_it_touches():
    assert batch_ranges([(1, 0), (1, 120), (1, 260), (4, 0), (4, 90)]) == [[1, 0, 3], [4, 0, 2]]
    assert batch_ranges([]) == []


@pytest.mark.parametrize("raw, expected", [("", 20_000), ("0", 0), ("5000", 5000), ("never", None),
                                           ("junk", 20_000)])
def test_when_indexing_moves_to_a_child(raw, expected, monkeypatch):
    monkeypatch.setenv("TRACE_INDEX_PROCESS_AFTER", raw)
    assert fulltext_process.handoff_after() == expected


def test_a_batch_the_log_does_not_hold_whole_is_refused_by_name(tmp_path, monkeypatch):
    from stores.fulltext_process import IndexerFailed, read_batch
    from stores.segments import list_segments
    store = _ingest(tmp_path, "s", "never", monkeypatch)
    seg = list_segments(store.segments_dir)[0]
    events, locations = read_batch(store.segments_dir, [[seg.first_seq, 0, 3]])
    assert [e["seq"] for e in events] == [1, 2, 3] and locations[0] == (seg.first_seq, 0)
    last = sum(1 for _ in store.events())
    with pytest.raises(IndexerFailed, match=f"segment {seg.first_seq} ends 2 line"):
        read_batch(store.segments_dir, [[seg.first_seq, locations[1][1], last + 1]])   # from seq 2: 2 past the end
