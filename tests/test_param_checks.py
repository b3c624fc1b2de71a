"""Every number option of every command takes only numbers the store can
keep, and every --session names a session: nan, inf, an integer past 64
bits and an empty session id are usage errors (one line, exit 2, nothing
written), whichever command, present or future, declares the option."""
from __future__ import annotations

import pytest

from tests.helpers import cli
from trace_cli.command_reference import commands
from trace_cli.param_checks import SELF_CHECKED

# The least each command needs to get as far as reading its options.
NEEDS = {
    ("recall",): ["x"], ("show",): ["1"], ("sweep", "revert"): ["L1"], ("note", "add"): ["x", "-c", "task"],
    ("anatomy", "record"): ["calls.jsonl"], ("anatomy", "diff"): ["1", "2"], ("hooks", "run"): ["Stop", "{}"],
}


def _options(kind: str) -> list:
    found = []
    for c in commands():
        if getattr(c.command, "commands", None) and c.path != ("sweep",):
            continue                                              # a group: its commands are listed
        if c.path[0] in SELF_CHECKED:
            continue                                              # below: its own checks, on both its paths
        for p in c.command.params:
            if not p.opts or not p.opts[0].startswith("--"):
                continue
            number = getattr(p.type, "_number_class", None)
            if (kind == "number" and number in (int, float)) or (kind == "session" and p.name == "session"):
                found.append(pytest.param(c.path, p.opts[0], number, id=" ".join((*c.path, p.opts[0]))))
    return found


NUMBERS, SESSIONS = _options("number"), _options("session")


def test_the_walk_finds_the_options_it_checks():
    assert len(NUMBERS) >= 40 and len(SESSIONS) >= 11
    ids = {p.id for p in NUMBERS + SESSIONS}
    assert {"context --budget", "sweep --llm-timeout", "ingest --poll", "export --session"} <= ids


def _refused(path, option, value, tmp_path):
    store = tmp_path / "store"
    run = cli("--store", str(store), *path, *NEEDS.get(path, []), option, value)
    assert option in run.err and run.err.count("\n") == 1, run.err
    assert "Traceback" not in run.err and "please report" not in run.err
    assert not store.exists()                                       # nothing written
    # `trace hooks run` never blocks an agent: its usage errors exit 0
    assert run.code == (0 if path == ("hooks", "run") else 2), run.err
    return run.err


@pytest.mark.parametrize("path,option,number", NUMBERS)
def test_a_number_option_refuses_nan_infinity_and_integers_past_64_bits(path, option, number, tmp_path):
    values = ["nan", "inf", "-inf", "1e400"] if number is float else [str(2**64), str(-2**64)]
    for value in values:
        err = _refused(path, option, value, tmp_path)
        assert "not a finite number" in err or "too large" in err or "not in the range" in err, err


@pytest.mark.parametrize("path,option,number", SESSIONS)
def test_an_empty_session_is_a_usage_error(path, option, number, tmp_path):
    for value in ("", "  "):
        assert "is empty" in _refused(path, option, value, tmp_path)


def test_the_largest_integer_still_works(tmp_path, samples):
    store = str(tmp_path / "store")
    assert cli("--store", store, "ingest", str(samples / "claude-code")).code == 0
    run = cli("--store", store, "context", "--session", "5b1f0c2e", "--budget", str(2**63 - 1))
    assert run.code == 0 and run.out.strip(), run.err


@pytest.mark.parametrize("option, value", [
    ("--min-score", "nan"), ("--min-score", "inf"), ("--mmr", "nan"), ("--mmr", "1e400"),
    ("--hops", str(2**64)), ("--session", ""), ("--session", "  "), ("-k", "nan"),
])
def test_recall_refuses_the_same_values_with_its_own_one_line_messages(tmp_path, option, value):
    run = cli("--store", str(tmp_path / "store"), "recall", "deploy", option, value)
    assert run.code == 2 and option in run.err and run.err.count("\n") == 1, run.err
    assert not (tmp_path / "store").exists()


def test_recall_takes_a_huge_k_or_budget_as_all_there_is(tmp_path, samples):
    store = str(tmp_path / "store")
    assert cli("--store", store, "ingest", str(samples / "claude-code")).code == 0
    for option in ("-k", "--budget"):
        run = cli("--store", store, "recall", "gateway port", option, str(2**70), *(["--block"] if option == "--budget" else []))
        assert run.code == 0 and run.out.strip() and "Traceback" not in run.err, (option, run.err)
