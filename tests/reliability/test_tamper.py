"""Defect 5: a log changed behind TRACE's back. Each case below is a way
the probe (and a careless hand, or a restored backup) changed segments/:
verify names it (exit 5), a writer refuses to append onto it (exit 5,
nothing written) until `trace verify --repair` records the loss (or ingest
--accept-changed-log), lost seqs are never used again, and a missing
segment is named as missing."""
from __future__ import annotations

import os
import shutil

import orjson
import pytest

from stores.log.segments import list_segments, segment_name
from tests.reliability.damage import rewrite_with_hashes
from stores.store import Store
from tests.helpers import cli, openai_conversations


@pytest.fixture
def store(tmp_path, trace_home, monkeypatch) -> Store:
    monkeypatch.setenv("TRACE_SEGMENT_BYTES", "2500")               # several segments
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 6, tool_every=1))).code == 0
    s = Store(trace_home)
    assert len(s.segments()) >= 5
    return s


def _lines(path):
    return path.read_bytes().splitlines(keepends=True)


def _sealed_with_lines(store, n: int = 2):
    """A sealed (not the last) segment of at least n lines."""
    return next(s.path for s in store.segments()[1:-1] if len(_lines(s.path)) >= n)


def _edit_middle_line(store):
    seg = _sealed_with_lines(store)
    lines = _lines(seg)
    i = next(i for i, line in enumerate(lines) if b"question" in line)
    lines[i] = lines[i].replace(b"question", b"questioN", 1)
    seg.write_bytes(b"".join(lines))


def _edit_last_line(store):
    seg = store.segments()[-1].path
    lines = _lines(seg)
    lines[-1] = lines[-1].replace(b'"kind":"', b'"kind":"x', 1)
    seg.write_bytes(b"".join(lines))


def _delete_middle_line(store):
    seg = _sealed_with_lines(store, 3)
    lines = _lines(seg)
    seg.write_bytes(b"".join(lines[:1] + lines[2:]))


def _cut_tail(store):
    seg = store.segments()[-1].path
    seg.write_bytes(b"".join(_lines(seg)[:-1]))


def _delete_segment(which):
    def tamper(store):
        store.segments()[which].path.unlink()
    return tamper


def _swap_lines(store):
    seg = _sealed_with_lines(store)
    lines = _lines(seg)
    lines[0], lines[1] = lines[1], lines[0]
    seg.write_bytes(b"".join(lines))


def _duplicate_line(store):
    seg = _sealed_with_lines(store)
    lines = _lines(seg)
    seg.write_bytes(b"".join(lines[:1] + lines[:1] + lines[1:]))


def _forged_line(store):
    seg = store.segments()[-1].path
    last = orjson.loads(_lines(seg)[-1])
    forged = {**last, "seq": last["seq"] + 1, "text": "forged", "prev": last["hash"], "hash": "0" * 64}
    with open(seg, "ab") as f:
        f.write(orjson.dumps(forged) + b"\n")


def _rewritten_with_hashes(store):
    rewrite_with_hashes(store.segments()[-1].path)


def _renamed_segment(store):
    seg = store.segments()[2].path
    os.rename(seg, seg.with_name(segment_name(int(seg.name[:20]) + 1)))


def _older_copy(tmp_path):
    def tamper(store):
        seg = store.segments()[-1].path
        shutil.copy(seg, tmp_path / "older")
        cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "more.jsonl", 1, prefix="more")))
        shutil.copy(tmp_path / "older", seg)
    return tamper


CASES = {
    "edit a sealed line": (_edit_middle_line, "altered"),
    "edit the last line": (_edit_last_line, "altered"),
    "delete a middle line": (_delete_middle_line, "missing"),
    "cut the tail": (_cut_tail, "missing"),
    "delete the last segment": (_delete_segment(-1), "missing"),
    "delete the first segment": (_delete_segment(0), "missing"),
    "delete a middle segment": (_delete_segment(2), "missing"),
    "swap two lines": (_swap_lines, "altered"),
    "duplicate a line": (_duplicate_line, "altered"),
    "append a forged line": (_forged_line, "altered"),
    "rewrite a line and every hash after it": (_rewritten_with_hashes, "accepted"),
    "rename a segment": (_renamed_segment, "altered"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_changed_log_is_named_refused_and_repaired_without_reusing_seqs(store, tmp_path, case):
    tamper, kind = CASES[case]
    seqs_before = max(e["seq"] for e in store.events())
    tamper(store)
    verify = cli("verify")
    assert verify.code == 5, verify.err
    events_before = sum(1 for _ in store.events(0))
    later = openai_conversations(tmp_path / "later.jsonl", 1, prefix="later")
    refused = cli("ingest", "--no-embed", str(later))
    assert refused.code == 5 and "the log was changed outside TRACE" in refused.err, refused.err
    assert sum(1 for _ in store.events(0)) == events_before              # nothing appended
    assert "Traceback" not in refused.err
    repaired = cli("verify", "--repair")
    assert repaired.code == (5 if kind == "altered" else 0), repaired.err
    added = cli("ingest", "--no-embed", str(later))
    assert added.code == 0, added.err
    new = [e for e in store.events(0) if "later" in e["text"]]
    assert new and min(e["seq"] for e in new) > seqs_before              # no seq is used twice
    if kind == "missing":
        assert cli("verify").code == 0
        assert "acknowledged by the loss record" in cli("verify").err
    if kind == "accepted":                       # consistent again, but the log itself says what was accepted
        after = cli("verify")
        assert after.code == 0 and "changed outside TRACE and accepted" in after.err


@pytest.mark.parametrize("which,named", [(0, "the first segment"), (2, "a segment is missing before this one")])
def test_a_missing_segment_is_named_missing_not_a_broken_chain(store, which, named):
    gone = store.segments()[which].path.name
    store.segments()[which].path.unlink()
    report = store.verify()
    assert report.exit_code == 5
    (problem,) = report.problems
    assert named in problem.problem and gone in problem.problem and "chain" not in problem.problem


def test_a_restored_older_copy_of_the_active_segment_is_refused(store, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACE_SEGMENT_BYTES", str(1 << 20))      # the next ingest appends to the same segment
    _older_copy(tmp_path)(store)
    refused = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "x.jsonl", 1, prefix="x")))
    assert refused.code == 5 and "gone from its end" in refused.err


def test_touching_or_copying_the_log_is_not_tampering(store, tmp_path, trace_home):
    for seg in store.segments():
        os.utime(seg.path)                               # new mtimes, same bytes: re-checked, accepted
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))).code == 0
    copy = tmp_path / "copy"
    shutil.copytree(trace_home, copy)                    # a backup restored elsewhere: every inode new
    run = cli("--store", str(copy), "ingest", "--no-embed", str(openai_conversations(tmp_path / "c.jsonl", 1, prefix="c")))
    assert run.code == 0, run.err
    assert cli("--store", str(copy), "verify").code == 0


def test_ingest_can_accept_the_change_itself(store, tmp_path):
    last = max(e["seq"] for e in store.events())
    _cut_tail(store)
    run = cli("ingest", "--no-embed", "--accept-changed-log", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")))
    assert run.code == 0 and f"events {last}..{last} are gone from the log" in run.err
    assert cli("verify").code == 0
    assert all(e["seq"] != last or e["meta"].get("lost") for e in store.events())


@pytest.mark.parametrize("garbage", [b"not json at all\n", b"\xef\xbb\xbf", b'{"seq": 100000000000000000000, "hash": "x"}\n'],
                         ids=["garbage", "byte-order mark", "seq past any integer"])
def test_a_sealed_line_that_is_no_event_is_refused_then_passed_over_once_accepted(store, tmp_path, garbage):
    """A line in the middle of the log that no longer parses as an event:
    named, refused, and once `verify --repair` accepts it the store works
    again (writers rebuild past it, readers of the rest are served); verify
    keeps naming it, since an append-only log cannot put it right."""
    last_before = max(e["seq"] for e in store.events())
    seg = _sealed_with_lines(store)
    lines = _lines(seg)
    i = next(i for i, line in enumerate(lines) if b"question" in line)
    lines[i] = garbage + lines[i] if garbage.startswith(b"\xef") else garbage
    seg.write_bytes(b"".join(lines))
    assert cli("verify").code == 5
    later = openai_conversations(tmp_path / "later.jsonl", 1, prefix="later")
    refused = cli("ingest", "--no-embed", str(later))
    assert refused.code == 5 and "the log was changed outside TRACE" in refused.err, refused.err
    repaired = cli("verify", "--repair")
    assert repaired.code == 5 and "Traceback" not in repaired.err and "report it" not in repaired.err, repaired.err
    added = cli("ingest", "--no-embed", str(later))
    assert added.code == 0 and added.lines()[0]["added"] > 0, added.err
    for args in (["stats"], ["recall", "later", "--mode", "fulltext", "-k", "2"], ["reindex"],
                 ["show", "--session", added.lines()[0]["session_id"]]):
        run = cli(*args)
        assert run.code == 0 and "Traceback" not in run.err, (args, run.err)
    new = [h["seq"] for h in cli("show", "--session", added.lines()[0]["session_id"]).lines()]
    assert new and min(new) > last_before                              # no seq is used twice
    still = cli("verify")
    assert still.code == 5 and f"{seg.name}:{i + 1}" in still.err


def test_a_removed_segments_folder_is_named_not_an_empty_store_and_repaired(store, tmp_path, trace_home):
    last = max(e["seq"] for e in store.events())
    shutil.rmtree(trace_home / "segments")
    verify = cli("verify")
    assert verify.code == 5 and "segments/: is missing" in verify.err, verify.err
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))).code == 5
    assert cli("verify", "--repair").code == 0
    added = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "c.jsonl", 1, prefix="c")))
    assert added.code == 0, added.err
    assert min(e["seq"] for e in store.events() if "lost" not in (e.get("meta") or {})) > last
    assert cli("verify").code == 0


def test_a_file_named_past_any_seq_in_segments_is_not_a_segment(store, tmp_path, trace_home):
    (trace_home / "segments" / ("9" * 20 + ".jsonl")).write_text('{"a": 1}\n')
    run = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")))
    assert run.code == 0 and "report it" not in run.err, run.err
    assert cli("recall", "b", "--mode", "fulltext").code in (0, 3)
    assert cli("verify").code == 0


def _segment_to_directory(store):
    seg = store.segments()[1].path
    seg.unlink()
    seg.mkdir()


def _segment_to_dangling_symlink(store):
    seg = store.segments()[1].path
    seg.unlink()
    seg.symlink_to(seg.parent / "nowhere.jsonl")


def _segment_to_symlink_loop(store):
    seg = store.segments()[1].path
    seg.unlink()
    seg.symlink_to(seg)


def _segment_to_fifo(store):
    seg = store.segments()[1].path
    seg.unlink()
    os.mkfifo(seg)


@pytest.mark.parametrize("tamper", [_segment_to_directory, _segment_to_dangling_symlink, _segment_to_symlink_loop,
                                    _segment_to_fifo])
def test_a_segment_name_on_something_that_is_no_file_is_an_integrity_failure_naming_the_fix(store, tmp_path, tamper):
    """Every command that reads the log says which path it is and what to
    do, with exit 5 (never a generic exit 1, never a hang on a pipe);
    once it is moved out of segments/, the loss is named and `trace verify
    --repair` records it, and the store takes new events again."""
    tamper(store)
    for args in (("verify",), ("recall", "question"), ("stats",), ("export",), ("reindex",),
                 ("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1))), ("verify", "--repair")):
        run = cli(*args)
        assert run.code == 5, (args, run.code, run.err)
        assert "not a segment file" in run.out + run.err and "trace verify --repair" in run.out + run.err, args
        assert "Traceback" not in run.err
    bad = next(p for p in (store.dir / "segments").iterdir() if not p.is_file())
    os.rename(bad, tmp_path / "moved-aside")
    assert cli("verify").code == 5
    assert cli("verify", "--repair").code == 0
    assert cli("verify").code == 0
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "c.jsonl", 1))).code == 0


@pytest.mark.parametrize("grow", [b" and a phrase someone added by hand", b""])
def test_after_repair_accepts_a_line_edited_to_a_new_length_every_reader_works_again(store, grow):
    """An edit that changes a line's length moves every line after it: the
    indexes (which point into the log by offset) no longer match it, so
    accepting the change rebuilds them -- recall and context answer again,
    and find the line as it now reads; verify keeps naming the line."""
    seg = _sealed_with_lines(store)
    lines = _lines(seg)
    i = next(i for i, line in enumerate(lines) if b"question" in line)
    edited = orjson.loads(lines[i])
    lines[i] = lines[i].replace(b"question", b"questionnaire" + grow, 1)
    seg.write_bytes(b"".join(lines))
    assert cli("verify", "--repair").code == 5                     # the altered line stays named
    for args in (["recall", "questionnaire", "--mode", "fulltext"], ["context", "--session", edited["session_id"]],
                 ["stats"], ["recall", "question"]):
        run = cli(*args)
        assert run.code == 0, (args, run.err)
    hits = cli("recall", "questionnaire", "--mode", "fulltext", "--json").lines()
    assert any(h.get("seq") == edited["seq"] for h in hits)


def test_a_copy_taken_mid_write_names_the_cut_tail_in_every_reader_never_line_zero(store):
    """A store copied while a writer was at work: the last line is cut short
    (a torn write) though the indexes had already seen it. `context`, which
    reads events where the index says they are, names the event that is not
    there and the command to run -- not "line 0 is not an event"."""
    seg = store.segments()[-1].path
    data = seg.read_bytes()
    last = orjson.loads(_lines(seg)[-1])
    seg.write_bytes(data[:-40])
    run = cli("context", "--session", last["session_id"])
    assert run.code == 5 and "Traceback" not in run.err, run.err
    assert ":0:" not in run.err and f"event {last['seq']}" in run.err and "trace verify" in run.err, run.err
    assert cli("verify").code == 5
    assert cli("verify", "--repair").code == 0
    assert cli("context", "--session", last["session_id"]).code == 0
