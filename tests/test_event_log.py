"""The event log: append-only, segment-rotated, hash-chained, torn-tail safe."""
from __future__ import annotations

import os

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reducers.canonical import GENESIS
from stores.log.event_log import EventLog
from stores.log.ids import IdGenerator, decode_ulid, encode_ulid, is_ulid
from stores.log.segments import iter_events, list_segments
from stores.store import Store
from tests.helpers import log_ending_with


def _event(i: int, text: str = "hello") -> dict:
    return {"session_id": "s1", "turn_id": f"s1/t{i}", "ts": None, "kind": "user",
            "text": f"{text} {i}", "tokens": 2, "source": {"format": "test", "key": f"k{i}"}}


def test_append_assigns_seq_id_and_hash_chain(tmp_path):
    log = EventLog(tmp_path)
    sealed = log.append([_event(i) for i in range(5)])
    assert [e["seq"] for e in sealed] == [1, 2, 3, 4, 5]
    assert sealed[0]["prev"] == GENESIS
    assert all(b["prev"] == a["hash"] for a, b in zip(sealed, sealed[1:]))
    assert all(is_ulid(e["id"]) for e in sealed)
    assert len({e["id"] for e in sealed}) == 5
    log.close()
    assert [e["text"] for e in iter_events(tmp_path / "segments")] == [f"hello {i}" for i in range(5)]


def test_seq_and_chain_continue_across_reopen(tmp_path):
    log = EventLog(tmp_path)
    first = log.append([_event(0)])
    log.close()
    log = EventLog(tmp_path)
    second = log.append([_event(1)])
    log.close()
    assert second[0]["seq"] == 2
    assert second[0]["prev"] == first[0]["hash"]
    assert decode_ulid(second[0]["id"]) > decode_ulid(first[0]["id"])


def test_tiny_segment_size_rotates_and_names_segments_by_first_seq(tmp_path):
    log = EventLog(tmp_path, segment_bytes=600)
    for i in range(10):
        log.append([_event(i), _event(i + 100)])
    log.close()
    segments = list_segments(tmp_path / "segments")
    assert len(segments) > 3
    for seg in segments:
        first_line = seg.path.read_bytes().split(b"\n", 1)[0]
        assert orjson.loads(first_line)["seq"] == seg.first_seq
        assert seg.path.name == f"{seg.first_seq:020d}.jsonl"
    assert [e["seq"] for e in iter_events(tmp_path / "segments")] == list(range(1, 21))
    assert Store(tmp_path).verify(check_indexes=False).ok


def test_reading_a_seq_range_starts_in_the_right_segment(tmp_path):
    log = EventLog(tmp_path, segment_bytes=500)
    log.append([_event(i) for i in range(30)])
    log.close()
    got = [e["seq"] for e in iter_events(tmp_path / "segments", 12, 17)]
    assert got == [12, 13, 14, 15, 16, 17]


def test_torn_tail_is_quarantined_never_served_and_the_chain_continues(tmp_path, capsys):
    log = EventLog(tmp_path)
    log.append([_event(i) for i in range(3)])
    log.close()
    seg = list_segments(tmp_path / "segments")[-1].path
    with open(seg, "ab") as f:
        f.write(b'{"seq":4,"kind":"user","text":"half a li')     # a crash mid-write
    # Readers never see the partial line.
    assert [e["seq"] for e in iter_events(tmp_path / "segments")] == [1, 2, 3]
    notes = []
    log = EventLog(tmp_path, warn=notes.append)
    sealed = log.append([_event(9)])
    log.close()
    assert sealed[0]["seq"] == 4
    assert notes and "torn write" in notes[0] and "quarantine" in notes[0]
    held = list((tmp_path / "quarantine").iterdir())
    assert len(held) == 1 and held[0].read_bytes() == b'{"seq":4,"kind":"user","text":"half a li'
    assert Store(tmp_path).verify(check_indexes=False).ok


def test_a_last_line_that_does_not_parse_is_quarantined_too(tmp_path):
    log_ending_with(tmp_path, [_event(i) for i in range(2)], b'{"seq":3, garbage}\n')
    notes = []
    log = EventLog(tmp_path, warn=notes.append)
    assert log.tail.seq == 2
    log.close()
    assert "does not parse" in notes[0]


def test_torn_writes_at_the_same_offset_are_each_kept_in_quarantine(tmp_path):
    log = EventLog(tmp_path)
    log.append([_event(i) for i in range(2)])
    log.close()
    seg = list_segments(tmp_path / "segments")[-1].path
    torn = [b'{"seq":3,"text":"first cra', b"garbage\n", b'{"seq":3,"text":"third cra']
    for data in torn:                                # a crash, a restart, the same crash again
        with open(seg, "ab") as f:
            f.write(data)
        EventLog(tmp_path).close()
    held = list((tmp_path / "quarantine").iterdir())
    assert sorted(p.read_bytes() for p in held) == sorted(torn)
    assert len({p.name for p in held}) == 3 and all(p.name.endswith(".torn") for p in held)
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in held)


def test_verify_names_segment_and_line_of_an_altered_event(tmp_path):
    log = EventLog(tmp_path)
    log.append([_event(i, "secret plan") for i in range(4)])
    log.close()
    seg = list_segments(tmp_path / "segments")[-1].path
    data = seg.read_bytes().replace(b"secret plan 2", b"public plan 2")
    seg.write_bytes(data)
    report = Store(tmp_path).verify(check_indexes=False)
    assert not report.ok
    assert report.problems[0].segment == seg.name and report.problems[0].line == 3
    assert "hash" in report.problems[0].problem


def test_verify_catches_a_deleted_line(tmp_path):
    log = EventLog(tmp_path)
    log.append([_event(i) for i in range(4)])
    log.close()
    seg = list_segments(tmp_path / "segments")[-1].path
    lines = seg.read_bytes().splitlines(keepends=True)
    seg.write_bytes(b"".join(lines[:1] + lines[2:]))
    report = Store(tmp_path).verify(check_indexes=False)
    assert not report.ok
    assert any("event 2 is missing: lines were removed" in p.problem for p in report.problems)


def test_ids_are_monotonic_within_a_millisecond_and_when_the_clock_steps_back():
    times = iter([1000.0] * 50 + [999.0] * 50)
    gen = IdGenerator(clock=lambda: next(times))
    ids = [decode_ulid(gen.new()) for _ in range(100)]
    assert ids == sorted(ids) and len(set(ids)) == 100


def test_a_batch_of_ids_counts_up_across_runs_of_1024_and_encodes_like_single_ids():
    gen = IdGenerator(clock=lambda: 1.0)
    gen.observe(encode_ulid((1000 << 80) | ((1 << 79) - 1000)))   # the next batch starts mid-run
    batch = gen.new_batch(5000)
    first = decode_ulid(batch[0])
    assert [decode_ulid(x) for x in batch] == list(range(first, first + 5000))
    assert all(encode_ulid(decode_ulid(x)) == x for x in batch)
    assert decode_ulid(gen.new()) == first + 5000


def test_an_imported_id_raises_the_floor():
    gen = IdGenerator(clock=lambda: 1.0)
    future = IdGenerator(clock=lambda: 2_000_000_000.0).new()
    gen.observe(future)
    assert decode_ulid(gen.new()) > decode_ulid(future)


def test_files_are_private(tmp_path):
    store = Store(tmp_path / "store")
    with store.writer() as w:
        w.log.append([_event(0)])
    assert (os.stat(store.dir).st_mode & 0o777) == 0o700
    seg = list_segments(store.segments_dir)[0].path
    assert (os.stat(seg).st_mode & 0o777) == 0o600
    assert (os.stat(store.dir / "state.db").st_mode & 0o777) == 0o600


def test_every_directory_and_file_of_a_full_store_is_private_whatever_the_umask(tmp_path):
    import json as _json
    from tests.helpers import cli
    src = tmp_path / "chat.json"
    src.write_text(_json.dumps([{"role": "user", "content": "show the log"},
                                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "bash", "arguments": "{}"}}]},
                                {"role": "tool", "tool_call_id": "c1", "content": "log line\n" * 5000}]))
    old = os.umask(0)
    try:
        run = cli("--store", str(tmp_path / "store"), "ingest", str(src))
        cli("--store", str(tmp_path / "store"), "recall", "log line")      # retrievals.jsonl, caches
    finally:
        os.umask(old)
    assert run.code == 0, run.err
    root = tmp_path / "store"
    paths = [root, *root.rglob("*")]
    assert any(p.suffix == ".gz" for p in paths)                        # an artifact among them
    loose = [str(p) for p in paths if (os.stat(p).st_mode & 0o777) != (0o700 if p.is_dir() else 0o600)]
    assert loose == []


def test_values_json_cannot_hold_are_coerced_not_fatal(tmp_path):
    log = EventLog(tmp_path)
    (sealed,) = log.append([{**_event(0), "text": "lone \ud800 surrogate", "meta": {"big": 1 << 70}}])
    log.close()
    (back,) = iter_events(tmp_path / "segments")
    assert back["text"] == "lone \ufffd surrogate" and back["meta"]["big"] == str(1 << 70)
    assert back == sealed and Store(tmp_path).verify(check_indexes=False).ok


json_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(texts=st.lists(json_text, min_size=1, max_size=20),
       meta=st.dictionaries(st.text(max_size=8), st.one_of(st.integers(-(1 << 63), (1 << 63) - 1), json_text, st.none()),
                            max_size=3))
def test_any_text_round_trips_exactly_and_verifies(tmp_path_factory, texts, meta):
    root = tmp_path_factory.mktemp("rt")
    log = EventLog(root, segment_bytes=700)
    events = [{**_event(i), "text": t, "meta": meta} for i, t in enumerate(texts)]
    log.append(events)
    log.close()
    back = list(iter_events(root / "segments"))
    assert [e["text"] for e in back] == texts
    assert all(e["meta"] == meta for e in back)
    assert Store(root).verify(check_indexes=False).ok


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(cut=st.integers(min_value=1, max_value=400))
def test_a_tail_torn_anywhere_never_serves_a_partial_event(tmp_path_factory, cut):
    root = tmp_path_factory.mktemp("torn")
    log = EventLog(root)
    log.append([_event(i, "x" * 40) for i in range(6)])
    log.close()
    seg = list_segments(root / "segments")[-1].path
    data = seg.read_bytes()
    cut = min(cut, len(data) - 1)
    seg.write_bytes(data[: len(data) - cut])
    served = list(iter_events(root / "segments"))
    assert all(e["text"].startswith("x" * 40) for e in served)
    complete = data[: len(data) - cut].count(b"\n")
    assert len(served) == complete
    log = EventLog(root)                       # the next writer repairs and continues the chain
    log.append([_event(99)])
    log.close()
    assert Store(root).verify(check_indexes=False).ok


def test_a_value_nested_deeper_than_json_writers_go_is_kept_as_its_json_text(tmp_path):
    deep = {"x": 1}
    for _ in range(600):                               # valid JSON; orjson writes 255 levels at most
        deep = {"a": deep}
    log = EventLog(tmp_path)
    log.append([{"session_id": "s", "turn_id": "s/t1", "ts": None, "kind": "tool_call", "text": "deep",
                 "tokens": 1, "tool": {"name": "deep", "call_id": "c1", "input": deep},
                 "source": {"format": "test", "key": "k"}}])
    log.close()
    (event,) = iter_events(tmp_path / "segments")
    kept, original, levels = event["tool"]["input"], deep, 0
    while isinstance(kept, dict):                      # the first levels stay structure...
        kept, original, levels = kept["a"], original["a"], levels + 1
    assert levels > 90
    assert isinstance(kept, str) and orjson.loads(kept) == original    # ...the rest is its JSON text, whole
    assert Store(tmp_path).verify(check_indexes=False).ok


def test_a_background_fsync_that_fails_is_reported_by_the_next_wait(tmp_path, monkeypatch):
    """append(durable=False) syncs on a thread; its error is not lost: the
    next wait_durable (the next append, a rotation, close) raises it."""
    import errno

    import pytest

    from stores.log import event_log
    from stores.log.event_log import LogWriteError

    log = EventLog(tmp_path)
    log.append([_event(0)])                              # the segment exists: the next append only writes
    real_fsync = os.fsync

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(event_log.os, "fsync", full_disk)
    log.append([_event(1)], durable=False)
    with pytest.raises(LogWriteError, match="No space left on device"):
        log.wait_durable()
    monkeypatch.setattr(event_log.os, "fsync", real_fsync)
    log.wait_durable()                                   # reported once, then the log goes on
    log.append([_event(2)])
    log.close()
    assert [e["seq"] for e in iter_events(tmp_path / "segments")] == [1, 2, 3]
