"""Readers and a torn last line: the log's last line that does not parse as a
sealed event is a torn write, never served (the next writer quarantines it);
a line that does not parse anywhere else is damage, named by segment and line."""
from __future__ import annotations

import orjson
import pytest

from stores.errors import IntegrityError
from stores.log.event_log import EventLog
from stores.log.segments import iter_events, last_event, list_segments, read_event_at
from stores.store import Store
from tests.helpers import cli, log_ending_with, openai_conversations

READERS = [("stats",), ("show", "1..1000"), ("export",), ("recall", "config"), ("show", "--session", "conv-0")]


def _ingested(tmp_path, trace_home, **kw):
    run = cli("ingest", "--session", "conv-0", str(openai_conversations(tmp_path / "a.jsonl", 2, **kw)))
    assert run.code == 0, run.err
    return list_segments(trace_home / "segments")


def _served(run) -> list[dict]:
    """What a reader served, without what differs run to run (file bytes, latency)."""
    return [{k: v for k, v in line.items() if k not in ("bytes", "latency_ms")} for line in run.lines()]


def _event(i: int) -> dict:
    return {"session_id": "s1", "turn_id": f"s1/t{i}", "ts": None, "kind": "user",
            "text": f"hello {i}", "tokens": 2, "source": {"format": "test", "key": f"k{i}"}}


@pytest.mark.parametrize("torn", [b"garbage\n", b'{"seq":99, garbage}\n', b'{"not":"an event"}\n', b"[1, 2]\n"])
def test_every_reader_passes_over_a_last_line_that_is_not_an_event(tmp_path, trace_home, torn):
    seg = _ingested(tmp_path, trace_home)[-1].path
    before = {args: _served(cli(*args)) for args in READERS}
    with open(seg, "ab") as f:
        f.write(torn)
    for args in READERS:
        run = cli(*args)
        assert run.code == 0 and "report it" not in run.err, (args, run.err)
        assert _served(run) == before[args], args
    assert seg.read_bytes().endswith(torn)          # readers take no lock: the next writer moves it


def test_a_torn_copy_of_a_real_line_does_not_shadow_it_in_lookups_by_id_or_session(tmp_path, trace_home):
    seg = _ingested(tmp_path, trace_home)[-1].path
    last = seg.read_bytes().splitlines()[-1]
    with open(seg, "ab") as f:
        f.write(last[: len(last) // 2] + b"\n")      # half the line again: its id and session, no seq/hash
    event = orjson.loads(last)
    (shown,) = cli("show", event["id"]).lines()
    assert shown == event
    assert cli("show", "--session", "conv-0", "--tail", "1").lines() == [event]


def test_the_log_tail_a_reader_sees_is_the_last_sealed_event(tmp_path):
    log_ending_with(tmp_path, [_event(i) for i in range(3)], b"garbage\n")
    assert last_event(tmp_path / "segments")["seq"] == 3
    assert [e["seq"] for e in iter_events(tmp_path / "segments")] == [1, 2, 3]


def test_a_line_inside_the_log_that_does_not_parse_is_damage_named_by_segment_and_line(tmp_path, trace_home):
    seg = _ingested(tmp_path, trace_home)[-1].path
    lines = seg.read_bytes().splitlines(keepends=True)
    lines[4] = b"garbage\n"
    seg.write_bytes(b"".join(lines))
    # (stats answers from state.db's counts, which never read the log before their watermark)
    assert cli("stats").code == 0
    for args in (("show", "1..1000"), ("export",)):
        run = cli(*args)
        assert run.code == 5, (args, run.err)
        assert f"segments/{seg.name}:5:" in run.err and "trace verify" in run.err
        assert run.err.count("\n") == 1 and "report it" not in run.err


def test_the_last_line_of_a_sealed_segment_is_damage_not_a_torn_tail(tmp_path):
    log = EventLog(tmp_path, segment_bytes=500)
    log.append([_event(i) for i in range(12)])
    log.close()
    first, *_ = list_segments(tmp_path / "segments")
    lines = first.path.read_bytes().splitlines(keepends=True)
    first.path.write_bytes(b"".join(lines[:-1]) + b"garbage\n")
    with pytest.raises(IntegrityError, match=f"segments/{first.path.name}:{len(lines)}:"):
        list(iter_events(tmp_path / "segments"))


def test_a_range_that_ends_before_the_damage_is_still_served(tmp_path):
    log = EventLog(tmp_path, segment_bytes=500)
    log.append([_event(i) for i in range(12)])
    log.close()
    last = list_segments(tmp_path / "segments")[-1]
    lines = last.path.read_bytes().splitlines(keepends=True)
    last.path.write_bytes(b"garbage\n" + b"".join(lines))
    assert [e["seq"] for e in iter_events(tmp_path / "segments", 1, last.first_seq - 1)] == list(range(1, last.first_seq))
    with pytest.raises(IntegrityError):
        list(iter_events(tmp_path / "segments", last.first_seq))


def test_a_located_line_that_does_not_parse_is_damage_named_by_segment_and_line(tmp_path):
    log = EventLog(tmp_path)
    log.append([_event(i) for i in range(3)])
    log.close()
    seg = list_segments(tmp_path / "segments")[0].path
    lines = seg.read_bytes().splitlines(keepends=True)
    seg.write_bytes(lines[0] + b"x" * (len(lines[1]) - 1) + b"\n" + lines[2])
    offset = len(lines[0])
    with pytest.raises(IntegrityError, match=f"segments/{seg.name}:2:"):
        read_event_at(tmp_path / "segments", 1, offset)


def test_verify_counts_a_torn_last_line_as_a_note_and_the_next_writer_quarantines_it(tmp_path, trace_home):
    seg = _ingested(tmp_path, trace_home)[-1].path
    n = seg.read_bytes().count(b"\n")
    with open(seg, "ab") as f:
        f.write(b"garbage\n")
    report = Store(trace_home).verify()
    assert report.ok and not report.problems
    assert any(f"{seg.name}:{n + 1}:" in note and "torn write" in note for note in report.notes)
    assert cli("ingest", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))).code == 0
    assert not seg.read_bytes().endswith(b"garbage\n")
    assert [p.read_bytes() for p in (trace_home / "quarantine").iterdir()] == [b"garbage\n"]
    assert Store(trace_home).verify().ok


def test_a_range_that_ends_just_before_a_damaged_line_in_the_same_segment_is_served(tmp_path):
    log = EventLog(tmp_path)
    log.append([_event(i) for i in range(6)])
    log.close()
    (seg,) = list_segments(tmp_path / "segments")
    lines = seg.path.read_bytes().splitlines(keepends=True)
    seg.path.write_bytes(b"".join(lines[:3]) + b"garbage\n" + b"".join(lines[3:]))
    assert [e["seq"] for e in iter_events(tmp_path / "segments", 3, 3)] == [3]    # nothing past seq 3 is read
    with pytest.raises(IntegrityError):
        list(iter_events(tmp_path / "segments", 3, 4))


def test_a_segment_reader_with_files_kept_open_reads_what_read_event_at_reads(tmp_path):
    """SegmentReader (recall's reader: segment files kept open, lines read
    with pread) serves each line as read_event_at does: long lines whole,
    a torn tail not at all, damage named, a missing segment as None, and a
    segment unlinked and made again under its name from its new file."""
    from stores.log.segments import SegmentReader
    log = EventLog(tmp_path)
    long_text = "word " * 5_000                     # past the reader's first read
    log.append([_event(0), {**_event(1), "text": long_text}, _event(2)])
    log.close()
    seg = list_segments(tmp_path / "segments")[0].path
    lines = seg.read_bytes().splitlines(keepends=True)
    offsets = [sum(map(len, lines[:i])) for i in range(len(lines))]
    reader = SegmentReader(tmp_path / "segments")
    for at in offsets:
        assert reader.event_at(1, at) == read_event_at(tmp_path / "segments", 1, at)
    assert reader.event_at(1, offsets[1])["text"] == long_text
    assert reader.event_at(1, offsets[-1] + len(lines[-1])) is None          # past the end
    assert reader.event_at(99, 0) is None                                   # no such segment
    with open(seg, "ab") as f:
        f.write(b'{"seq": 4, "hash": "x"')                                  # a torn tail, no newline
    assert reader.event_at(1, offsets[-1] + len(lines[-1])) is None
    seg.unlink()                                                            # made again under its name
    seg.write_bytes(lines[0] + b"x" * (len(lines[1]) - 1) + b"\n" + lines[2])
    assert reader.event_at(1, offsets[0]) == read_event_at(tmp_path / "segments", 1, offsets[0])
    with pytest.raises(IntegrityError, match=f"segments/{seg.name}:2:"):
        reader.event_at(1, offsets[1])
    reader.close()
