"""A long ingest hands full-text indexing to a child process
(stores/index/fulltext_process.py). The index it builds is the one the writer
would have built in process, and a child that fails hands the work back:
the index still ends up holding every event."""
from __future__ import annotations

import subprocess
import sys

import pytest

import stores.index.fulltext_process as fulltext_process
from stores.index.fulltext import FulltextIndex
from stores.index.fulltext_documents import index_rows
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
        hits = [[(h.seq, round(h.score, 4), h.gp) for h in ft.search(q, [], limit=20)] for q in QUERIES]
        hits.append([(h.seq, h.gp) for h in ft.search([], ["config_7_1.yaml"], limit=5)])
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
    monkeypatch.setattr("stores.index.indexes.IndexerProcess", DyingIndexer)
    notes: list[str] = []
    store = _ingest(tmp_path, "s", "0", monkeypatch, notes)
    assert any("indexer process stopped" in n and "status 3" in n for n in notes), notes
    events = sum(1 for _ in store.events())
    watermark, docs, hits = _index_view(store)
    assert watermark == docs == events and all(hits)
    assert store.verify().ok


def test_a_row_holds_what_the_index_takes_of_an_event():
    events = [{"seq": 7, "session_id": "s", "kind": "tool_result", "ts": "2026-05-01T12:00:00.000Z",
               "text": "head … tail", "tool": {"name": "Bash", "call_id": "c1", "is_error": False},
               "artifact": {"id": "ab" * 32}},
              {"seq": 8, "session_id": "s", "kind": "user", "ingested_at": "2026-05-01T12:00:01.000Z", "text": "hi"}]
    rows = index_rows(events, [(1, 0), (1, 300)], {7: "the whole output"})
    assert rows == [[7, 1, 0, "s", "tool_result", "2026-05-01T12:00:00.000Z", "Bash", "the whole output"],
                    [8, 1, 300, "s", "user", "2026-05-01T12:00:01.000Z", None, "hi"]]


def test_rows_json_cannot_hold_exactly_still_reach_the_child(tmp_path):
    """A lone surrogate (the log writes U+FFFD) must not stop the batch."""
    child = fulltext_process.IndexerProcess(tmp_path, None)
    child.add([[1, 1, 0, "s", "user", "2026-05-01T12:00:00.000Z", None, "broken \ud800 walrus text"]])
    child.commit(1)
    ft = FulltextIndex(tmp_path)
    try:
        assert [h.seq for h in ft.search(["walrus"], [])] == [1]
    finally:
        ft.close()


@pytest.mark.parametrize("raw, expected", [("", 20_000), ("0", 0), ("5000", 5000), ("never", None),
                                           ("junk", 20_000)])
def test_when_indexing_moves_to_a_child(raw, expected, monkeypatch):
    monkeypatch.setenv("TRACE_INDEX_PROCESS_AFTER", raw)
    assert fulltext_process.handoff_after() == expected
