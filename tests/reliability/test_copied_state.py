"""state.db copied in from another store (a user copying files between
stores) is derived state that belongs to another log, not evidence that
this log was rewritten: verify reports the log intact and names state.db
with the fix (exit 6), stats counts from the log, and the next writer
rebuilds state.db from this log and appends. The same folder's own log
rewritten from its first event, hashes and all, is still refused (exit 5)."""
from __future__ import annotations

import shutil

import pytest

from stores.store import Store
from tests.helpers import cli, openai_conversations
from tests.reliability.damage import rewrite_with_hashes


@pytest.fixture
def two_stores(tmp_path, samples):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert cli("--store", str(ours), "ingest", "--no-embed", str(samples / "claude-code"),
               str(samples / "codex")).code == 0
    assert cli("--store", str(theirs), "ingest", "--no-embed",
               str(openai_conversations(tmp_path / "t.jsonl", 8, tool_every=1))).code == 0
    return ours, theirs


def _copy_state(source, target):
    for suffix in ("-wal", "-shm"):
        (target / f"state.db{suffix}").unlink(missing_ok=True)
    shutil.copy(source / "state.db", target / "state.db")


def test_another_stores_state_db_is_named_as_that_and_the_log_reported_intact(two_stores):
    ours, theirs = two_stores
    events = cli("--store", str(ours), "stats", "--json").lines()[0]
    _copy_state(theirs, ours)
    run = cli("--store", str(ours), "verify", "--json")
    report = run.lines()[0]
    assert run.code == 6, run.err
    assert report["problems"] == []                              # the log itself is intact
    assert len(report["derived"]) == 1
    assert report["derived"][0].startswith("state.db: belongs to another log")
    assert "copied from another store" in report["derived"][0] and "`trace verify --repair`" in report["derived"][0]
    assert "rewritten" not in run.err and "removed" not in run.err

    stats = cli("--store", str(ours), "stats", "--json")
    assert stats.code == 0 and "belongs to another log" in stats.err
    assert {k: stats.lines()[0][k] for k in ("events", "sessions", "by_kind")} == \
        {k: events[k] for k in ("events", "sessions", "by_kind")}


@pytest.mark.parametrize("fix", [["verify", "--repair"], ["ingest", "--no-embed"]])
def test_a_writer_rebuilds_it_from_this_log_and_appends(two_stores, tmp_path, fix):
    ours, theirs = two_stores
    before = [s.path.read_bytes() for s in Store(ours).segments()]
    _copy_state(theirs, ours)
    extra = [str(openai_conversations(tmp_path / "more.jsonl", 1, prefix="more"))] if fix[0] == "ingest" else []
    run = cli("--store", str(ours), *fix, *extra)
    assert run.code == 0, run.err
    if fix[0] == "ingest":
        assert "state.db belongs to another log" in run.err and "rebuilt from this store's log" in run.err
    after = b"".join(s.path.read_bytes() for s in Store(ours).segments())
    assert after.startswith(b"".join(before))                    # nothing in the log rewritten
    assert cli("--store", str(ours), "verify").code == 0


def test_this_folders_own_log_rewritten_from_its_first_event_is_still_refused(two_stores):
    ours, _ = two_stores
    cli("--store", str(ours), "stats")                           # (a writer has recorded the identity)
    rewrite_with_hashes(Store(ours).segments()[0].path)
    verify = cli("--store", str(ours), "verify")
    assert verify.code == 5 and "belongs to another log" not in verify.out + verify.err
    ingest = cli("--store", str(ours), "ingest", "--no-embed", str(ours.parent / "t.jsonl"))
    assert ingest.code == 5 and "changed outside TRACE" in ingest.err


@pytest.mark.parametrize("part", ["fulltext", "vectors"])
def test_another_stores_index_is_derived_damage_not_a_cut_tail_and_repair_records_no_loss(tmp_path, samples, part):
    """An index copied from a bigger store records seqs this log never had.
    With state.db (this log's own) not past the log's end, that is the
    index's fault: exit 6 and a rebuild, never a loss record in the log."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert cli("--store", str(ours), "ingest", str(samples / "openai")).code == 0
    assert cli("--store", str(theirs), "ingest", str(samples)).code == 0
    shutil.rmtree(ours / part)
    shutil.copytree(theirs / part, ours / part)
    log = [s.path.read_bytes() for s in Store(ours).segments()]
    run = cli("--store", str(ours), "verify", "--json")
    report = run.lines()[0]
    assert run.code == 6 and report["problems"] == [], run.out
    assert any(d.startswith(f"{part}/: records events up to seq") and "copied from another store" in d
               for d in report["derived"]), report["derived"]
    assert cli("--store", str(ours), "verify", "--repair").code == 0
    assert [s.path.read_bytes() for s in Store(ours).segments()] == log      # no loss recorded
    assert cli("--store", str(ours), "verify").code == 0
