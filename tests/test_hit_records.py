"""The hit records (fulltext/hits.bin, stores/hit_records): a hit's numbers
packed by seq, so recall reads one column instead of eight.

They must equal the index's own columns for every indexed event, follow
every commit, come back when the file is missing, and never be trusted
when a record or the header is damaged: recall then reads the columns and
answers exactly as before."""
from __future__ import annotations

import json
import shutil

import pytest

from stores.index.fulltext import FulltextIndex
from stores.index.fulltext_search import HIT_COLUMNS
from stores.hit_records import FILE, HitRecords, Record
from stores.hit_records.records import SIZE
from stores.recall import Recaller, RecallQuery
from stores.store import Store
from tests.helpers import cli
from trace_cli.bench.needles import build_session


def _write_sessions(path, seeds, turns=120):
    sessions = [build_session(turns=turns, needles=4, flood_words=40, seed=s, tag=f"s{s}", distractors=True,
                              long_output_words=300 if s % 2 else 0) for s in seeds]
    with open(path, "w") as f:
        for s in sessions:
            f.write(json.dumps({"messages": s.messages}) + "\n")
    return [n for s in sessions for n in s.needles]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("hit-records")
    needles = _write_sessions(root / "sessions.jsonl", range(3))
    store = Store(root / "store")
    assert sum(r.added for r in store.ingest([str(root / "sessions.jsonl")])) > 0
    Recaller(store).prepare("hybrid")                     # the indexes caught up with the log
    return store, needles


def _columns(ft: FulltextIndex) -> dict[int, tuple]:
    """Every live document's numbers, read column by column from the index."""
    import tantivy
    searcher = ft.open().searcher()
    addrs = [a for _, a in searcher.search(tantivy.Query.all_query(), searcher.num_docs + 10).hits]
    cols = [searcher.fast_field_values(name, addrs) for name in HIT_COLUMNS]
    return {row[0]: row for row in zip(*cols)}


def _as_columns(record) -> tuple:
    return tuple(Record(*record[:len(Record._fields)]))       # HIT_COLUMNS is the records' own order


def test_every_indexed_event_has_a_record_equal_to_its_columns(store):
    st, _ = store
    ft = FulltextIndex(st.dir)
    want = _columns(ft)
    records = HitRecords(ft.dir)
    assert records.covered() == ft.watermark == max(want)
    got = records.read(sorted(want))
    assert got is not None and {r[0]: _as_columns(r) for r in got} == want


def test_recall_answers_the_same_from_the_records_as_from_the_columns(store, monkeypatch):
    st, needles = store
    used = []
    read = HitRecords.read
    monkeypatch.setattr(HitRecords, "read", lambda self, seqs: used.append(1) or read(self, seqs))
    queries = [RecallQuery(query=q, k=10, mode=mode) for n in needles for q in (n.query, n.value)
               for mode in ("fulltext", "hybrid")]
    rc = Recaller(st)
    rc.prepare("hybrid")
    from_records = [[(h.seq, h.score, h.scores) for h in rc.recall(q)] for q in queries]
    assert used
    monkeypatch.setattr(HitRecords, "read", lambda self, seqs: None)     # as with no file: the columns
    rc = Recaller(st)
    rc.prepare("hybrid")
    from_columns = [[(h.seq, h.score, h.scores) for h in rc.recall(q)] for q in queries]
    assert from_records == from_columns and any(from_records)


def test_a_damaged_record_or_header_is_never_trusted(store, tmp_path):
    st, _ = store
    copy = tmp_path / "fulltext"
    shutil.copytree(st.dir / "fulltext", copy)
    seqs = sorted(_columns(FulltextIndex(st.dir)))
    assert HitRecords(copy).read(seqs) is not None
    target = seqs[len(seqs) // 2]
    with open(copy / FILE, "r+b") as f:                   # one bit of its gp
        f.seek(target * SIZE + 24)
        byte = f.read(1)
        f.seek(target * SIZE + 24)
        f.write(bytes([byte[0] ^ 1]))
    records = HitRecords(copy)
    assert records.read([target]) is None and records.read(seqs) is None
    assert records.read([seqs[0], seqs[1]]) is not None     # the others still hold
    assert records.read([seqs[-1] + 1]) is None             # past what the header vouches for
    with open(copy / FILE, "r+b") as f:                   # the header's covered seq
        f.seek(9)
        f.write(b"\xff")
    assert HitRecords(copy).read([seqs[0]]) is None and HitRecords(copy).covered() == 0
    (copy / FILE).write_bytes(b"short")
    assert HitRecords(copy).read([seqs[0]]) is None


def test_a_missing_file_comes_back_at_the_next_commit_and_follows_the_log(tmp_path):
    store = Store(tmp_path / "store")
    _write_sessions(tmp_path / "a.jsonl", [1], turns=40)
    assert sum(r.added for r in store.ingest([str(tmp_path / "a.jsonl")])) > 0
    Recaller(store).prepare("fulltext")
    ft_dir = store.dir / "fulltext"
    (ft_dir / FILE).unlink()
    assert HitRecords(ft_dir).read([1]) is None
    _write_sessions(tmp_path / "b.jsonl", [2], turns=40)
    assert sum(r.added for r in store.ingest([str(tmp_path / "b.jsonl")])) > 0
    Recaller(store).prepare("fulltext")
    ft = FulltextIndex(store.dir)
    want = _columns(ft)
    assert HitRecords(ft_dir).covered() == ft.watermark
    assert {r[0]: _as_columns(r) for r in HitRecords(ft_dir).read(sorted(want))} == want
    assert cli("--store", str(store.dir), "verify").code == 0


def test_records_past_the_trusted_watermark_are_written_again(store, tmp_path):
    """A crash after the records and before the watermark: the next commit
    rewrites the records past the watermark it trusts, whatever the header says."""
    st, _ = store
    copy = tmp_path / "fulltext"
    shutil.copytree(st.dir / "fulltext", copy)
    ft = FulltextIndex(tmp_path)
    top = ft.watermark
    want = _columns(ft)
    with open(copy / FILE, "r+b") as f:                   # the last records lost, the header intact
        f.seek((top - 4) * SIZE)
        f.write(bytes(5 * SIZE))
    records = HitRecords(copy)
    assert records.covered() == top and records.read([top]) is None
    records.catch_up(ft.open(), top, top)                 # the header trusted: nothing to do
    assert HitRecords(copy).read([top]) is None
    records.catch_up(ft.open(), top, top - 10)            # the watermark before the commit
    assert {r[0]: _as_columns(r) for r in HitRecords(copy).read(sorted(want))} == want


@pytest.mark.parametrize("scan", [None, 2])
def test_latest_finds_the_newest_event_of_the_kinds_in_a_session(store, monkeypatch, scan):
    """latest() picks the newest of the matches it finds unordered (or, past
    LATEST_SCAN matches, lets the index order them): the event with the
    highest seq of those kinds in that session, as the log says."""
    import stores.index.fulltext_search as fs
    from stores.log.segments import iter_events, read_event_at
    st, _ = store
    if scan:
        monkeypatch.setattr(fs, "LATEST_SCAN", scan)
    newest: dict[tuple[str, str], int] = {}
    for e in iter_events(st.segments_dir):
        newest[(e["session_id"], e["kind"])] = max(newest.get((e["session_id"], e["kind"]), 0), e["seq"])
    ft = FulltextIndex(st.dir)
    sessions = sorted({sid for sid, _ in newest})
    assert len(sessions) >= 3
    for sid in sessions:
        for kinds in (["tool_call"], ["task_state"], ["user", "assistant"], ["tool_result", "tool_call"]):
            want = max((newest.get((sid, k), 0) for k in kinds), default=0)
            at = ft.latest(sid, kinds)
            assert (read_event_at(st.segments_dir, *at)["seq"] if at else 0) == want, (sid, kinds)
    assert ft.latest("no-such-session", ["user"]) is None


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    """Agent sessions (every kind) beside plain chats (no tool call, no task)."""
    from tests.helpers import openai_conversations
    root = tmp_path_factory.mktemp("mixed")
    _write_sessions(root / "agents.jsonl", range(2), turns=40)
    store = Store(root / "store")
    for path in (root / "agents.jsonl", openai_conversations(root / "chats.jsonl", 3, turns=4, prefix="chat")):
        assert sum(r.added for r in store.ingest([str(path)])) > 0
    Recaller(store).prepare("fulltext")
    return store


@pytest.mark.parametrize("then_words", [["todowrite", "update_plan"], ["question"], ["no-such-word-anywhere"], []])
def test_latest_each_answers_as_latest_asked_session_by_session(mixed_store, monkeypatch, then_words):
    """One query for many sessions (recall weighing its best hits' tasks)
    finds, for each, what latest() finds: the newest of the first kinds,
    else the newest of the others holding the words (some sessions have
    the first kinds, some do not); and gives up (None) when the matches
    fill a scan, so the caller asks one by one."""
    import stores.index.fulltext_search as fs
    from stores.log.segments import iter_events
    st = mixed_store
    ft = FulltextIndex(st.dir)
    gp = {seq: row[3] for seq, row in _columns(ft).items()}
    ordinals = {}                                         # session -> its ordinal (gp >> 32)
    for e in iter_events(st.segments_dir):
        ordinals[e["session_id"]] = gp[e["seq"]] >> 32
    assert len(ordinals) >= 5
    with_calls = sum(1 for sid in ordinals if ft.latest(sid, ["tool_call"]))
    assert 0 < with_calls < len(ordinals)                 # the first kinds in some sessions only
    for kinds, then in ((["task_state"], ["tool_call"]), (["tool_call"], ["user"]),
                        (["no_such_kind"], ["assistant"])):
        want = {}
        for sid in ordinals:
            at = ft.latest(sid, kinds) or ft.latest(sid, then, then_words)
            if at is not None:
                want[sid] = at
        assert ft.latest_each(ordinals, kinds, then, then_words) == want, (kinds, then)
    monkeypatch.setattr(fs, "LATEST_SCAN", 2)
    assert ft.latest_each(ordinals, ["tool_result"], ["user"], ["question"]) is None
    assert ft.latest_each({}, ["tool_result"], ["user"], ["question"]) == {}


def test_verify_names_a_damaged_record_file_and_a_writer_writes_it_afresh(tmp_path):
    """The records are sealed with the index's files: `trace verify` names
    one changed since (exit 6, as any derived file); a writer that finds
    it changed since its seal writes it all again before trusting its header."""
    store = Store(tmp_path / "store")
    _write_sessions(tmp_path / "a.jsonl", [1], turns=40)
    assert sum(r.added for r in store.ingest([str(tmp_path / "a.jsonl")])) > 0
    Recaller(store).prepare("fulltext")
    ft_dir = store.dir / "fulltext"
    assert cli("--store", str(store.dir), "verify").code == 0
    path = ft_dir / FILE
    data = bytearray(path.read_bytes())
    data[5 * SIZE + 8] ^= 1                                # record 5's segment, CRC left as it was
    path.write_bytes(bytes(data))
    run = cli("--store", str(store.dir), "verify")
    assert run.code == 6 and "fulltext/hits.bin" in run.err
    assert HitRecords(ft_dir).read([5]) is None            # never trusted meanwhile
    _write_sessions(tmp_path / "b.jsonl", [2], turns=40)
    assert sum(r.added for r in store.ingest([str(tmp_path / "b.jsonl")])) > 0
    Recaller(store).prepare("fulltext")
    want = _columns(FulltextIndex(store.dir))
    assert {r[0]: _as_columns(r) for r in HitRecords(ft_dir).read(sorted(want))} == want
    assert cli("--store", str(store.dir), "verify").code == 0


def test_a_sessions_todo_call_is_found_by_the_tools_whole_name_not_by_its_words(tmp_path):
    """Recall weighs a session's open todo items (its newest todo call when
    it kept no task state). A later call of another tool whose text says
    "update", "plan", "todo" or "write" is not that call: `update_plan`
    matches as one name, never as its words."""
    from reducers.tasks import TODO_TOOLS
    from stores.log.segments import iter_events, read_event_at

    def call(i, name, args):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    def result(i, text):
        return {"role": "tool", "tool_call_id": f"c{i}", "content": text}

    messages = [{"role": "user", "content": "migrate the billing tables"},
                call(1, "update_plan", {"plan": [{"step": "rename the invoices column", "status": "pending"}]}),
                result(1, "Plan updated"),
                call(2, "shell", {"command": "echo update the plan; write todo list"}),
                result(2, "update the plan; write todo list"),
                call(3, "todo_writer_log", {"note": "nothing to do with todos"}),
                result(3, "ok")]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": messages}) + "\n")
    store = Store(tmp_path / "store")
    assert sum(r.added for r in store.ingest([str(path)])) > 0
    Recaller(store).prepare("fulltext")
    ft = FulltextIndex(store.dir)
    (session_id,) = {e["session_id"] for e in iter_events(store.segments_dir)}
    names = [t.lower() for t in TODO_TOOLS]
    at = ft.latest(session_id, ["tool_call"], names)
    assert at is not None and read_event_at(store.segments_dir, *at)["tool"]["name"] == "update_plan"
    ordinal = next(iter(_columns(ft).values()))[3] >> 32
    assert ft.latest_each({session_id: ordinal}, ["no_such_kind"], ["tool_call"], names) == {session_id: at}
    assert ft.latest(session_id, ["tool_call"], ["todowrite"]) is None        # a one-word name: the body's word
    assert ft.holds_names(names)                          # recall weighs tasks in this store...
    assert not ft.holds_names(["TodoWrite", "todo_write", "manage_todo_list"])  # ...not for calls saying todo, write, list
