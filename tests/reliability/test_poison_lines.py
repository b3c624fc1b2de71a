"""Defect 1: one bad `trace`-format line must never break a store. Every
event is checked against the schema before it is appended: a bad line is
`file:line: reason` and never reaches the log; the lines around it do.
Lines an older version wrote without the checks are read as their neutral
values by everything that derives from them, and verify names them."""
from __future__ import annotations

import json

import orjson
import pytest

from stores.store import Store
from tests.helpers import cli, trace_events
from tests.reliability.poison import WRONG_FIELDS, old_version_store, trace_line


@pytest.mark.parametrize("name,value", WRONG_FIELDS, ids=[f"{n}={v!r}"[:40] for n, v in WRONG_FIELDS])
def test_a_wrong_typed_field_is_a_bad_line_and_never_in_the_log(tmp_path, trace_home, name, value):
    src = trace_events(tmp_path / "export.jsonl", [trace_line(1), trace_line(2, **{name: value}), trace_line(3)])
    run = cli("ingest", "--no-embed", "--format", "trace", str(src))
    assert run.code == 1
    (result,) = run.lines()
    assert result["added"] == 2 and result["errors"] == 1
    assert f"{src}:2: " in run.err and "Traceback" not in run.err
    store = Store(trace_home)
    assert [e["text"] for e in store.events()] == ["marmalade question number 1", "marmalade question number 3"]
    assert store.verify().ok


def test_a_file_of_poison_lines_leaves_a_store_every_command_still_uses(tmp_path, trace_home):
    lines = []
    for i, (name, value) in enumerate(WRONG_FIELDS):
        lines += [trace_line(2 * i + 1), trace_line(2 * i + 2, **{name: value})]
    src = trace_events(tmp_path / "poison.jsonl", lines)
    run = cli("ingest", str(src))                      # detected as `trace`, like the probe's
    assert run.code == 1 and run.lines()[0]["added"] == len(WRONG_FIELDS)
    assert run.err.count(f"{src}:") == len(WRONG_FIELDS)
    for args in (["stats"], ["recall", "marmalade question", "-k", "3"], ["reindex"], ["verify"],
                 ["ingest", str(trace_events(tmp_path / "later.jsonl", [trace_line(999)]))]):
        later = cli(*args)
        assert later.code == 0, (args, later.err)
        assert "Traceback" not in later.err and "please report" not in later.err


def test_a_store_an_older_version_poisoned_still_serves_every_command(tmp_path, trace_home):
    bad = old_version_store(trace_home)
    store = Store(trace_home)
    commands = [["stats"], ["recall", "marmalade", "-k", "5"], ["recall", "marmalade", "--mode", "fulltext"],
                ["index"], ["reindex"], ["export"], ["show", "1..40"], ["show", "--session", "old"],
                ["context", "--session", "good", "--format", "text"],
                ["context", "--session", "old", "--format", "text"],       # read through the session reader
                ["compact", "--session", "old", "--budget", "200", "--headroom", "10"],
                ["compact", "--session", "good", "--budget", "300", "--headroom", "10"],
                ["ingest", str(trace_events(tmp_path / "later.jsonl", [trace_line(7)]))]]
    for args in commands:
        run = cli(*args)
        assert run.code == 0, (args, run.err)
        assert "Traceback" not in run.err and "please report" not in run.err, args
    hits = cli("recall", "old marmalade row", "--mode", "fulltext", "-k", "50").lines()
    assert len({h["seq"] for h in hits}) >= len(bad) - 3          # found through the index, as text
    report = store.verify()
    assert report.ok and report.malformed == len(bad)
    verify = cli("verify")
    assert verify.code == 0 and verify.err.count("written before events were checked") == len(bad)
    # the log keeps them exactly as written: append-only
    raw = [orjson.loads(l) for seg in store.segments() for l in seg.path.read_bytes().splitlines()]
    assert sum(1 for e in raw if e.get("session_id") == "old" or (e.get("source") or {}) == 5) >= 1
    exported = [json.loads(l) for l in cli("export").out.splitlines()]
    assert any(e.get("tokens") == "x" for e in exported)


def test_stats_counts_an_old_lines_tokens_from_its_text(tmp_path, trace_home):
    old_version_store(trace_home, extra_good=0)
    (trace_home / "state.db").unlink(missing_ok=True)       # counted from the log, not the state
    stats = cli("stats").lines()[0]
    assert stats["events"] == len([f for f in WRONG_FIELDS if f[0] not in ("artifact_content",
                                                                            "attachments_content", "id")])


def test_the_chokepoint_refuses_a_bad_draft_from_any_parser(tmp_path, trace_home, monkeypatch):
    """A parser bug that yields a wrong-typed field is caught where every
    event passes, reported with its line, and the rest of the file kept."""
    import reducers.formats.openai as openai
    real = openai.parse

    def leaky(records, ctx):
        for item in real(records, ctx):
            if getattr(item, "text", "") == "second":
                item.ts = 12345                           # not a string: must not reach the log
            yield item
    monkeypatch.setattr(openai, "parse", leaky)
    src = tmp_path / "chat.jsonl"
    src.write_text("".join(json.dumps({"messages": [{"role": "user", "content": t}]}) + "\n"
                           for t in ("first", "second", "third")))
    run = cli("ingest", "--no-embed", "--format", "openai", str(src))
    assert run.code == 1 and run.lines()[0]["added"] == 2 and run.lines()[0]["errors"] == 1
    assert f"{src}:2: ts is not a string; this event was not written" in run.err
    assert [e["text"] for e in Store(trace_home).events()] == ["first", "third"]


def test_an_imported_reference_to_content_never_carried_leaves_a_store_that_verifies(tmp_path, trace_home):
    """An exported event naming an artifact and an attachment whose content
    did not come along is kept with a warning and marked: verify notes it
    (exit 0, not an integrity failure no append could ever clear), export
    carries the mark, and content that later arrives is checked as usual."""
    art, att = "a" * 64, "b" * 64
    bare = trace_line(2, kind="tool_result", artifact={"id": art, "bytes": 9},
                      meta={"attachments": [{"id": att, "media_type": "image/png"}]})
    src = trace_events(tmp_path / "bare.jsonl", [trace_line(1), bare, trace_line(3)])
    run = cli("ingest", "--no-embed", "--format", "trace", str(src))
    assert run.code == 0 and run.lines()[0]["added"] == 3
    assert run.err.count("which this store does not hold") == 2
    verify = cli("verify")
    assert verify.code == 0 and "never in this store" in verify.err, verify.err
    exported = cli("export")
    assert exported.code == 0
    again = next(e for e in exported.lines() if e["seq"] == 2)
    assert again["artifact"]["not_carried"] is True and again["meta"]["attachments"][0]["not_carried"] is True
    assert "artifact_content" not in again and "attachments_content" not in again
    # the same id from an event that carries it: stored, and checked from then on
    carried = trace_line(4, kind="tool_result", artifact_content="nine byte")
    assert cli("ingest", "--no-embed", "--format", "trace",
               str(trace_events(tmp_path / "carried.jsonl", [carried]))).code == 0
    held = next(e for e in Store(trace_home).events() if e["seq"] == 4)["artifact"]["id"]
    next((trace_home / "artifacts").rglob(f"{held}*")).unlink()
    assert cli("verify").code == 5


@pytest.mark.parametrize("value", [-5, -1])
def test_a_negative_count_is_named_as_out_of_range_not_as_a_fraction(tmp_path, trace_home, value):
    bad = trace_events(tmp_path / "neg.trace.jsonl", [trace_line(1), trace_line(2, tokens=value), trace_line(3)])
    run = cli("ingest", "--format", "trace", str(bad))
    assert run.code == 1 and "neg.trace.jsonl:2: tokens is not a whole number (0 or more)" in run.err, run.err


@pytest.mark.parametrize("ts", ["2026-01-02T03:04:05", "2026-01-02 03:04:05.123456", "0001-01-01T00:00:00",
                                "9999-12-31T23:59:59.999+14:00", "yesterday", ""])
def test_an_imported_timestamp_in_an_odd_form_leaves_every_command_working(tmp_path, trace_home, ts):
    # a `trace` line keeps its ts as written; one with no zone among zoned ones
    # must compare (read as UTC), one unreadable counts as no time
    lines = [trace_line(1), trace_line(2, ts=ts), trace_line(3, ts="2026-01-02T05:04:05.000Z")]
    for n in range(4, 10):
        lines.append(trace_line(n, ts=f"2026-01-02T0{n - 3}:00:00.000Z", text=f"we decided to use postgres {n}"))
    src = trace_events(tmp_path / "odd-ts.jsonl", lines)
    assert cli("ingest", "--no-embed", "--format", "trace", str(src)).code == 0
    for args in (["sweep"], ["digest", "--out", str(tmp_path / "MEMORY.md")], ["stats"], ["reindex"], ["verify"],
                 ["recall", "marmalade question", "--since", "2026-01-01"], ["export"],
                 ["context", "--session", "poison-session", "--format", "text"]):
        run = cli(*args)
        assert run.code in (0, 3), (args, run.err)
        assert "Traceback" not in run.err and "please report" not in run.err, args
