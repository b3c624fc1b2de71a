"""`trace verify` and a cut-off tail: the hash chain cannot see lines removed
from the end, but state.db and the indexes record how far the log had
reached. They only ever lag the log; one that is ahead is evidence of loss."""
from __future__ import annotations

import shutil
import sqlite3

import stores.verify
from stores.log.segments import list_segments
from stores.store import Store
from tests.helpers import cli, openai_conversations


def _ingested(tmp_path, trace_home, segment_bytes: str | None = None, monkeypatch=None) -> Store:
    if segment_bytes:
        monkeypatch.setenv("TRACE_SEGMENT_BYTES", segment_bytes)
    run = cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3, tool_every=1)))
    assert run.code == 0, run.err
    return Store(trace_home)


def _drop_last_lines(store: Store, n: int) -> None:
    seg = list_segments(store.segments_dir)[-1].path
    lines = seg.read_bytes().splitlines(keepends=True)
    seg.write_bytes(b"".join(lines[:-n]))


def test_removing_the_last_lines_fails_verify_naming_the_missing_events(tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    last = store.stats().last_seq
    _drop_last_lines(store, 2)
    run = cli("verify")
    assert run.code == 5
    assert f"log ends at seq {last - 2} but state.db" in run.err
    assert f"events {last - 1}..{last} are missing" in run.err
    assert "reindex" not in run.err                    # the index advice would hide the loss


def test_deleting_the_last_segment_file_fails_verify(tmp_path, trace_home, monkeypatch):
    store = _ingested(tmp_path, trace_home, "1500", monkeypatch)
    segments = list_segments(store.segments_dir)
    assert len(segments) > 2
    segments[-1].path.unlink()
    report = store.verify()
    assert not report.ok
    (problem,) = report.problems
    assert problem.segment == segments[-2].path.name
    assert f"log ends at seq {segments[-1].first_seq - 1}" in problem.problem
    assert f"the log's tail was removed (event {segments[-1].first_seq}" in problem.problem


def test_the_full_text_watermark_alone_is_evidence_too(tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    (store.dir / "state.db").unlink()
    _drop_last_lines(store, 1)
    (problem,) = store.verify().problems
    assert "but the full-text index and the vector index recorded events up to" in problem.problem


def test_derived_files_that_lag_or_are_missing_are_not_an_alarm(tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    db = sqlite3.connect(store.dir / "state.db")
    db.execute("UPDATE meta SET value='3' WHERE name='keys_seq'")      # a state.db that lags: it catches up
    db.commit()
    db.close()
    assert store.verify().ok
    (store.dir / "state.db").unlink()
    assert store.verify().ok


def test_verify_reads_state_db_without_changing_it(tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    before = (store.dir / "state.db").read_bytes()
    _drop_last_lines(store, 1)
    assert not store.verify().ok
    assert (store.dir / "state.db").read_bytes() == before


def test_a_writer_appending_while_verify_runs_is_not_a_cut_tail(tmp_path, trace_home, monkeypatch):
    store = _ingested(tmp_path, trace_home)
    read_watermark = stores.verify.recorded_seq

    def a_writer_gets_in_first(store_dir):        # events appended and recorded after verify read the log
        assert cli("ingest", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))).code == 0
        return read_watermark(store_dir)
    monkeypatch.setattr(stores.verify, "recorded_seq", a_writer_gets_in_first)
    report = store.verify(check_indexes=False)
    assert report.ok, report.problems


def test_an_index_problem_is_located_in_the_store_not_under_segments(tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    cli("ingest", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")), "--no-embed")
    shutil.rmtree(store.dir / "fulltext")                                # an index gone: run `trace reindex`
    report = store.verify()
    assert report.problems == [] and report.exit_code == 6              # derived damage, not the log's
    (problem,) = report.derived
    assert str(problem).startswith("fulltext/: ") and ":0:" not in str(problem)
    assert problem.at(store.dir).startswith(f"{store.dir}/fulltext/: ")
    assert "segments/fulltext" not in problem.at(store.dir)


def test_a_log_line_problem_is_located_by_segment_and_line(tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    seg = list_segments(store.segments_dir)[0].path
    seg.write_bytes(seg.read_bytes().replace(b"question 1", b"questioN 1", 1))
    problem = store.verify().problems[0]
    assert problem.at(store.dir).startswith(f"{store.dir}/segments/{seg.name}:")


def test_the_next_writer_refuses_a_cut_tail_until_repair_records_the_loss_and_never_reuses_its_seqs(
        tmp_path, trace_home):
    store = _ingested(tmp_path, trace_home)
    last = store.stats().last_seq
    _drop_last_lines(store, 2)
    later = str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="later"))
    refused = cli("ingest", later)
    assert refused.code == 5 and "the log was changed outside TRACE" in refused.err
    assert "trace verify --repair" in refused.err
    assert sum(1 for _ in store.events()) == last - 2                  # nothing appended
    repaired = cli("verify", "--repair")
    assert repaired.code == 0, repaired.err
    lost = store.dir / "quarantine" / "lost-events.log"
    assert f"events {last - 1}..{last} were missing from the log" in lost.read_text()
    assert cli("ingest", later).code == 0
    seqs = [e["seq"] for e in store.events()]
    assert seqs[last - 2] == last + 1 and not set(seqs) & {last - 1, last}      # the lost seqs are not reused
    loss = next(e for e in store.events() if e["seq"] == last + 1)
    assert loss["meta"]["lost"] == [last - 1, last] and f"events {last - 1}..{last} are missing" in loss["text"]
    after = cli("verify")                                # the loss is acknowledged in the log, and not forgotten
    assert after.code == 0
    assert f"events {last - 1}..{last} are missing, acknowledged by the loss record at seq {last + 1}" in after.err


def test_an_index_that_only_lags_the_log_is_a_note_not_a_failure(tmp_path, trace_home):
    # an interrupted ingest leaves the index behind; recall (or `trace index`) catches it up
    store = _ingested(tmp_path, trace_home)
    indexed = store.stats().last_seq
    from stores.log.event_log import EventLog
    log = EventLog(store.dir)                         # appended, then killed before the index caught up
    log.append([{"session_id": "s", "turn_id": "t", "ts": None, "kind": "user", "text": "late", "tokens": 1,
                 "source": {"key": "late"}}])
    log.close()
    report = store.verify()
    assert report.ok and any(f"full-text index covers seq {indexed} of {indexed + 1}" in n for n in report.notes)
    db = sqlite3.connect(store.dir / "fulltext" / "positions.db")
    db.execute("UPDATE meta SET value='2' WHERE name='seq'")        # its bookkeeping edited by hand: damage
    db.commit()
    db.close()
    assert store.verify().exit_code == 6


def test_an_index_ahead_of_verifys_scan_is_a_writers_append_not_damage(tmp_path, trace_home):
    """Readers take no lock: a writer may append and index after verify
    read the log. The full-text index then holds more documents than the
    scan counted; that is not derived damage. (The report stands in for a
    scan that ended one event early.) A count that differs at the same
    watermark still is."""
    store = _ingested(tmp_path, trace_home)
    report = store.verify()
    assert report.ok
    early = stores.verify.VerifyReport(store=report.store, events=report.events - 1, last_seq=report.last_seq - 1)
    stores.verify._check_indexes(store, early)
    assert early.derived == []
    wrong = stores.verify.VerifyReport(store=report.store, events=report.events - 1, last_seq=report.last_seq)
    stores.verify._check_indexes(store, wrong)
    assert [p.segment for p in wrong.derived] == ["fulltext/"]


def test_a_full_text_index_of_an_older_schema_is_named_as_such_and_the_next_recall_rebuilds_it(
        tmp_path, trace_home, monkeypatch):
    import stores.index.fulltext
    built = stores.index.fulltext.SCHEMA_VERSION
    _ingested(tmp_path, trace_home)
    monkeypatch.setattr(stores.index.fulltext, "SCHEMA_VERSION", built + 1)      # this TRACE reads a newer one
    run = cli("verify")
    assert run.code == 6 and f"full-text index of an older TRACE (schema {built}, this one reads {built + 1})" in run.err
    assert cli("recall", "deploy").code in (0, 3) and cli("verify").code == 0
