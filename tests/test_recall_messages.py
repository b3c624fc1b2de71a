"""What a user of `trace recall` reads: --help, and the one line each
failure prints, naming the fix (both recall paths print the same:
tests/test_quick_recall_parity.py)."""
from __future__ import annotations

import pytest

from tests.helpers import run_captured
from tests.recall_world import argv as _argv, home, world  # noqa: F401 (fixtures)
from trace_cli.app import main as full_main
from trace_cli.quick_recall import run_quick


def test_recall_help_names_the_install_the_kinds_and_what_each_mode_does():
    shown = run_captured(full_main, ["recall", "--help"])
    text = " ".join(shown.out.replace("│", " ").split())
    assert shown.code == 0
    assert "make install-rerank" in text and "pip install '.'" not in text      # Rich once ate "[rerank]"
    assert "tool_result" in text and "task_state" in text                     # --kind lists the kinds
    assert "fulltext: words and exact tokens only" in text
    assert "- reads stdin" in text and "N [x>=1]" in text


def test_a_queries_file_names_each_bad_line_and_why(home):
    run = run_captured(run_quick, ["recall", "--queries", home["@bad"]])
    said = {int(line.split(": line ")[1].split(":")[0]): line.split(": ", 2)[2]
            for line in run.err.splitlines() if ": line " in line}
    assert said[3].startswith("not JSON (")
    assert said[6] == '"k" must be an integer, not "3"'
    assert said[7] == 'need an object with a string "query"'
    assert said[9] == '"kind" must be a string or a list of strings'
    assert said[10] == '"rerank" must be true or false, not 1'
    assert run.code == 1 and run.err.endswith("6 malformed lines in " + home["@bad"] + " (reported above); "
                                              "the 3 others were answered\n")
    alone = run_captured(run_quick, ["recall", "--queries", "-"], b'{"query": "x", "k": 0}\n')
    assert alone.code == 1 and alone.err == ("stdin: line 1: -k 0: give how many hits to return, at least 1\n"
                                             "trace: error: 1 malformed line in stdin (reported above)\n")


@pytest.mark.parametrize("line", [b'{"query": "deploy", "session": ""}\n', b'{"query": "deploy", "session": " "}\n'])
def test_an_empty_session_in_a_queries_line_is_that_line_s_error_not_every_session(home, line):
    run = run_captured(run_quick, ["recall", "--queries", "-"], line)
    assert run.code == 1 and run.out == "" and run.err.startswith("stdin: line 1: --session is empty: give a session id")


def test_an_empty_session_through_the_python_api_is_a_usage_error(home):
    from stores.errors import UsageError
    from stores.store import Store
    with pytest.raises(UsageError, match="--session is empty"):
        Store().recall("deploy", session="")


def test_one_kind_given_as_a_string_through_the_python_api_is_that_kind(home):
    from stores.store import Store
    hits = Store().recall("deploy", kinds="user").hits
    assert hits and {h.kind for h in hits} == {"user"}


@pytest.mark.parametrize("args,said", [
    (["recall"], 'say what to recall: trace recall "docker ssl error", or --queries FILE for many'),
    (["recall", ""], "empty query: say what to recall"),
    (["recall", "deploy", "--session", ""], "--session is empty: give a session id or a unique prefix"),
    (["recall", "--queries", ""], "--queries needs a file"),
    (["recall", "deploy", "--store"], "--store needs a value: --store DIR"),
    (["recall", "deploy", "-k"], "Option '-k' requires an argument. (see `trace recall --help`)"),
    (["recall", "deploy", "--since", "\u00b2d"], "--since '\u00b2d' is not a time"),
    (["recall", "deploy", "--since", "2020-01-01", "--until", "2019-01-01"],
     "--until '2019-01-01' is before --since '2020-01-01': no event can be in between; swap them"),
    (["recall", "deploy", "--since", "1d", "--until", "3d"], "--until '3d' is before --since '1d'"),
], ids=["nothing", "empty", "empty-session", "empty-queries", "store-without-dir", "k-without-value", "odd-digit",
        "until-before-since", "ages-swapped"])
def test_a_usage_error_is_one_line_naming_the_fix(home, args, said):
    run = run_captured(full_main, args)
    assert run.code == 2 and run.out == "" and run.err.startswith(f"trace: error: {said}") and run.err.count("\n") == 1


@pytest.mark.parametrize("args,said", [
    (["--store", "@emptystore", "recall", "deploy"], "the store at @emptystore holds no events yet; add transcripts "
                                                     "with `trace ingest PATH`"),
    (["recall", "deploy", "--min-score", "0.999"],                                # hybrid already: not "--mode hybrid"
     "no hit scored 0.999 or more; try other words, --hops 2 or a lower --min-score"),
    (["recall", "zebra quux", "--mode", "fulltext"], "no hits for 'zebra quux'; try other words or --mode hybrid"),
    (["recall", "deploy", "--min-score", "0.999", "--hops", "2"],
     "no hit scored 0.999 or more; try other words or a lower --min-score"),
    (["recall", "zebra quux", "--mode", "fulltext", "--kind", "user", "--since", "3d"],
     "no hits for 'zebra quux'; widen --kind, --since"),
], ids=["empty-store", "hybrid", "fulltext", "min-score-hops-2", "filters"])
def test_nothing_found_says_what_to_try_that_was_not_tried(home, args, said):
    run = run_captured(run_quick, _argv(args, home))
    assert run.code == 3 and run.out == "" and run.err.startswith("trace: error: " + _argv([said], home)[0])


def test_an_age_older_than_time_filters_nothing_out_and_rebuilds_no_index(home):
    every = run_captured(run_quick, ["recall", "deploy", "-k", "99999999999999999999999"])
    since = run_captured(run_quick, ["recall", "deploy", "-k", "1000", "--since", "1000000000000d"])
    assert every.code == since.code == 0 and every.err == since.err == ""       # no "index error ... rebuilding"
    assert len(since.lines()) == len(every.lines()) > 10


def test_a_retrieval_log_the_user_cannot_write_costs_a_note_naming_the_fix_not_the_hits(tmp_path, monkeypatch):
    import os

    from stores.recall.query import RecallQuery
    from stores.recall.retrieval_log import append_retrieval
    (tmp_path / "retrievals.jsonl").mkdir()              # opening it to append fails, but not as a refusal (EISDIR)
    notes: list[str] = []
    append_retrieval(tmp_path, RecallQuery(query="deploy"), [], 0.01, notes.append)
    assert len(notes) == 1 and "could not append to the retrieval log" in notes[0] and "chmod" not in notes[0]

    real_open = os.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith("retrievals.jsonl"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", refuse)
    notes.clear()
    append_retrieval(tmp_path, RecallQuery(query="deploy"), [], 0.01, notes.append)
    assert len(notes) == 1 and f"`chmod -R u+w {tmp_path}`" in notes[0] and "learns nothing" in notes[0]
