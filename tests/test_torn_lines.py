"""Transcript lines a crashed write left behind (reported again and again
on Claude Code's issue tracker): a run of NUL bytes where data never
reached the disk, and a record cut short with the next one appended on
the same line. The whole records such a line holds are read, and the loss
is reported as file:line; plain bad JSON is reported as before."""
from __future__ import annotations

import json

import orjson

from reducers.torn_lines import salvage
from tests.helpers import cli, transcript_events

SESSION = "0d6f3c1e-7a2b-4c5d-8e9f-a0b1c2d3e4f5"


def line(uuid, parent, text, rtype="user"):
    message = ({"role": "user", "content": text} if rtype == "user" else
               {"id": f"msg_{uuid}", "role": "assistant", "model": "claude", "content": [{"type": "text", "text": text}]})
    return json.dumps({"type": rtype, "uuid": uuid, "parentUuid": parent, "sessionId": SESSION, "isSidechain": False,
                       "timestamp": "2026-04-17T10:00:00.000Z", "message": message}).encode()


def test_a_line_of_nul_bytes_alone_holds_no_record_and_says_what_was_lost():
    assert salvage(b"\x00" * 300, orjson.loads) == ([], "300 NUL bytes (data a crash kept from reaching the disk)")


def test_records_padded_or_preceded_by_nuls_are_read_whole():
    record = line("u1", None, "hello")
    for raw in (record + b"\x00" * 9000, b"\x00" * 64 + record):
        records, lost = salvage(raw, orjson.loads)
        assert records == [json.loads(record)]
        assert lost.endswith("the 1 whole record(s) on it are read")


def test_a_record_cut_short_gives_way_to_the_one_appended_after_it():
    stub = b'{"type":"pr-link","sessionId":"' + SESSION.encode() + b'","prNu'
    records, lost = salvage(stub + line("u2", "u1", "next"), orjson.loads)
    assert records == [json.loads(line("u2", "u1", "next"))]
    assert lost.startswith("a record cut short by a crashed write")


def test_text_that_is_simply_not_json_is_not_salvaged():
    assert salvage(b"this is not json", orjson.loads) is None
    assert salvage(b'{"type": "user", "message": ', orjson.loads) is None      # cut, with nothing after it


def test_ingest_reads_every_whole_record_around_crash_damage_and_reports_each_damaged_line(tmp_path, trace_home):
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"\n".join([
        line("u1", None, "first prompt"),
        b"\x00" * 500,                                                        # a write lost in a crash
        line("a1", "u1", "first reply", "assistant") + b"\x00" * 2000,       # a record padded by one
        b'{"type":"pr-link","sessionId":"' + SESSION.encode() + b'","prNu' + line("u2", "a1", "second prompt"),
        line("a2", "u2", "second reply", "assistant"),
        b"\x00" * 128,                                                        # the crash hit the last append
    ]))
    run = cli("ingest", str(transcript))
    assert run.code == 1
    [result] = run.lines()
    assert (result["format"], result["errors"], result["pending"]) == ("claude-code", 4, 0)
    assert [e["text"] for e in transcript_events(trace_home)] == [
        "first prompt", "first reply", "second prompt", "second reply"]
    damaged = [l.split(": ", 1)[0].rsplit(":", 1)[1] for l in run.err.splitlines() if "session.jsonl:" in l]
    assert damaged == ["2", "3", "4", "6"]
    again = cli("ingest", "--recheck", str(transcript))
    assert again.lines()[0]["added"] == 0
