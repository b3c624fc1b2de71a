"""Notes: `trace note add|list` and the Python API, through the append
chokepoint, in the pack and in the recalled context's knowledge part."""
from __future__ import annotations

import shutil

import pytest

from stores.errors import UsageError
from stores.notes import GLOBAL_SESSION, add_note, list_notes
from stores.store import Store
from tests.helpers import cli
from tests.sessions import ClaudeSession


def test_notes_are_listed_newest_first_with_the_global_ones_in_every_session(tmp_path):
    store = Store(tmp_path / "s")
    a = add_note(store, "squash-merge PRs, never rebase shared branches", "decision")
    b = add_note(store, "the staging DB is read-only until Friday", "context", session="s1")
    c = add_note(store, "tabs, not spaces, in the Makefile", "preference", session="s2")
    assert a["session_id"] == GLOBAL_SESSION and b["seq"] > a["seq"]
    assert [n["seq"] for n in list_notes(store)] == [c["seq"], b["seq"], a["seq"]]
    assert [n["seq"] for n in list_notes(store, session="s1")] == [b["seq"], a["seq"]]
    assert [n["text"] for n in list_notes(store, category="preference")] == ["tabs, not spaces, in the Makefile"]
    assert list_notes(store, limit=1) == [list_notes(store)[0]]
    event = next(e for e in store.events() if e["seq"] == b["seq"])
    assert event["kind"] == "note" and event["meta"]["note"]["category"] == "context"
    assert store.verify().ok


def test_bad_notes_are_refused_with_a_usage_error(tmp_path):
    store = Store(tmp_path / "s")
    with pytest.raises(UsageError, match="empty note"):
        add_note(store, "   ", "task")
    with pytest.raises(UsageError, match="unknown --category"):
        add_note(store, "x", "todo")
    assert not store.exists() or not list(store.events())
    assert cli("note", "add", "--category", "decision", stdin=b"").code == 2   # no text, an empty pipe
    assert cli("note", "add", "--category", "nope", "text").code == 2
    assert cli("note", "add", "text").code == 2                             # --category is required


def test_secrets_in_a_note_are_redacted_like_any_event(tmp_path, trace_home):
    r = cli("note", "add", "-c", "context", "deploy key is sk-ant-api03-" + "A" * 90)
    assert r.code == 0
    (event,) = [e for e in Store(trace_home).events() if e["kind"] == "note"]
    assert "AAAAAAAAAA" not in event["text"] and "[REDACTED" in event["text"]


def test_note_add_reads_stdin_and_list_prints_json_lines(tmp_path, trace_home):
    cli("ingest", str(ClaudeSession("s9").user("Refunds next").assistant("On it.").write(tmp_path / "s9.jsonl")))
    assert cli("note", "add", "-c", "task", "-s", "s9", "-", stdin=b"finish the refund flow\n").code == 0
    assert cli("note", "add", "-c", "correction", "the port is 8443, not 8080").code == 0
    listed = cli("note", "list", "--session", "s9").lines()
    assert [(n["category"], n["text"]) for n in listed] == [("correction", "the port is 8443, not 8080"),
                                                            ("task", "finish the refund flow")]
    # the index is derived: without it the log is read
    shutil.rmtree(trace_home / "fulltext")
    assert cli("note", "list", "--session", "s9").lines() == listed


def test_a_sessions_notes_ride_in_its_push_pack_and_recall_puts_notes_in_knowledge(tmp_path, trace_home):
    src = ClaudeSession("p1").user("Set up the billing export job please").assistant("Done: the job runs nightly.")
    cli("ingest", str(src.write(tmp_path / "s.jsonl")))
    cli("note", "add", "-c", "decision", "-s", "p1", "billing exports go to the finance bucket, never to ops")
    text = cli("context", "--session", "p1", "--budget", "2000", "--format", "text", "--no-recall").out
    assert "## Notes" in text and "finance bucket" in text
    block = cli("recall", "which bucket do billing exports go to", "--block", "--budget", "4000").out
    assert "<knowledge>" in block and "[note] billing exports go to the finance bucket" in block


def test_listing_no_notes_says_so_and_exits_3(tmp_path):
    store = str(tmp_path / "s")
    add_note(Store(tmp_path / "s"), "tabs, not spaces, in the Makefile", "preference", session="s2")
    for args, said in ((["--category", "decision"], "of category 'decision'"),
                       (["--session", "s2", "--category", "decision"], "in session 's2'")):
        run = cli("--store", store, "note", "list", *args)
        assert run.code == 3 and run.out == "" and "no notes" in run.err and said in run.err, run.err
    assert cli("--store", store, "note", "list").code == 0


def test_a_note_piped_in_that_is_not_utf8_is_refused_not_stored_with_replacement_characters(trace_home):
    run = cli("note", "add", "-c", "context", "-", stdin="café au lait".encode("latin-1"))
    assert run.code == 2 and run.out == "" and "not valid UTF-8 (byte 4 is 0xe9)" in run.err
    assert not Store(trace_home).exists() or not [e for e in Store(trace_home).events() if e["kind"] == "note"]
    assert cli("note", "add", "-c", "context", "-", stdin="café au lait".encode()).lines()[0]["text"] == "café au lait"


def test_a_note_for_a_session_the_store_does_not_hold_is_refused_and_nothing_is_written(tmp_path, trace_home):
    none = cli("note", "add", "-c", "context", "-s", "s1", "x")                    # no store yet: it holds none
    assert none.code == 1 and "no TRACE store" in none.err and not trace_home.exists()
    cli("ingest", str(ClaudeSession("refund-flow").user("Refunds next").assistant("On it.").write(tmp_path / "a.jsonl")))
    before = list(Store(trace_home).events())
    for args in (["note", "add", "-c", "task", "-s", "refund-flwo", "finish it"],     # a typo
                 ["note", "list", "-s", "refund-flwo"]):
        run = cli(*args)
        assert run.code == 1 and run.out == "", args
        assert "unknown session 'refund-flwo'" in run.err and "refund-flow" in run.err and "trace sessions" in run.err
    assert list(Store(trace_home).events()) == before
    added = cli("note", "add", "-c", "task", "-s", "refund-f", "finish it").lines()    # a unique prefix names it
    assert added[0]["session_id"] == "refund-flow"
