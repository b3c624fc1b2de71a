"""`trace sessions` lists what the store holds, and every --session takes
a unique prefix of an id (git-style)."""
from __future__ import annotations

import pytest

from tests.helpers import cli

CC = "5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"


@pytest.fixture
def demo(samples):
    assert cli("ingest", str(samples), "-q").code == 0


def test_sessions_lists_each_session_with_format_source_times_and_title(demo):
    run = cli("sessions")
    assert run.code == 0
    rows = {r["session_id"]: r for r in run.lines()}
    cc = rows[CC]
    assert cc["format"] == "claude-code"
    assert cc["source"].endswith("demo-session.jsonl")
    assert cc["events"] == 14 + 1 and cc["tokens"] > 0              # the transcript and its working state
    assert cc["title"].startswith("Checkout has been timing out")
    assert cc["first_ts"] <= cc["last_ts"]
    assert {r["format"] for r in rows.values()} >= {"claude-code", "codex", "openai", "anthropic"}


def test_sessions_are_newest_first(demo):
    last = [r["last_ts"] for r in cli("sessions").lines()]
    assert last == sorted(last, reverse=True)


def test_sessions_filters(demo):
    codex = cli("sessions", "--source", "codex").lines()
    assert codex and all(r["format"] == "codex" for r in codex)
    by_path = cli("sessions", "--source", "support-chat").lines()
    assert by_path and all("support-chat" in r["source"] for r in by_path)
    grep = cli("sessions", "--grep", "GATEWAY").lines()
    assert [r["session_id"] for r in grep] == ["0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"]


def test_no_match_says_so_and_exits_3(demo):
    run = cli("sessions", "--grep", "no-such-thing-anywhere")
    assert run.code == 3 and run.out == "" and "no sessions match" in run.err


def test_a_bad_since_is_one_line_and_a_usage_error_as_in_recall(demo):
    run = cli("sessions", "--since", "yesterday-ish")
    assert run.code == 2 and "is not a time" in run.err and run.err.count("\n") == 1
    assert cli("recall", "x", "--since", "yesterday-ish").code == run.code


def test_a_unique_prefix_names_the_session(demo):
    run = cli("show", "--session", CC[:6], "--tail", "1")
    assert run.code == 0 and run.lines()[0]["session_id"] == CC
    assert cli("export", "--session", CC[:4]).lines()[0]["session_id"] == CC


def test_an_ambiguous_prefix_lists_the_candidates(demo):
    run = cli("show", "--session", "01")
    assert run.code == 1
    assert "ambiguous" in run.err and "0199a1b2" in run.err and "019c7e21" in run.err


def test_an_unknown_session_names_known_ones(demo):
    run = cli("export", "--session", "zzz")
    assert run.code == 1 and "unknown session 'zzz'" in run.err and "trace sessions" in run.err
