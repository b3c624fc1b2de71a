"""A plain `trace recall` runs without Typer (trace_cli/quick_recall.py):
it must know the command's options exactly, print the same bytes and exit
with the same code as the full CLI, and hand everything else to it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer

from trace_cli.app import full_app, main as full_main
from trace_cli.quick_recall import FLAGS, VALUES, parse, run_quick
from trace_cli.recall_answer import DEFAULTS
from tests.helpers import cli, run_captured


def _recall_params():
    return typer.main.get_command(full_app()).commands["recall"].params


def test_the_quick_path_reads_every_option_of_the_command_as_click_does():
    known = {*VALUES, *FLAGS}
    for param in _recall_params():
        if param.param_type_name == "argument":
            assert param.name == "query" and param.default == DEFAULTS["query"]
            continue
        assert set(param.opts) <= known, f"{param.opts}: the quick path would hand this option to the full CLI"
        if param.name == "json_out":
            continue
        assert param.default == DEFAULTS[param.name], param.name
        for opt in param.opts:
            if opt in VALUES:
                assert VALUES[opt][0] == param.name and not param.is_flag
            else:
                assert FLAGS[opt] == param.name and param.is_flag
        if getattr(param.type, "min", None) is not None:         # an IntRange: the quick path refuses below it
            assert parse(["recall", "x", param.opts[0], str(param.type.min - 1)]) is None
    named = {opt for p in _recall_params() for opt in getattr(p, "opts", ())}
    assert known <= named, "the quick path reads an option the command does not have"


@pytest.fixture()
def store(tmp_path):
    msgs = [{"role": "user", "content": "the deploy token was rotated on Monday"},
            {"role": "assistant", "content": "noted: deploy token rotated, old one revoked"},
            {"role": "user", "content": "what port does the health probe listen on?"},
            {"role": "assistant", "content": "the health probe listens on port 8443"}]
    src = tmp_path / "s.jsonl"
    src.write_text(json.dumps({"messages": msgs}) + "\n")
    assert cli("ingest", str(src)).code == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "deploy token"}\n{"id": "b", "query": 5}\n'
                       '{"id": "c", "query": "zebra crossing", "mode": "fulltext"}\n')
    return tmp_path


PLAIN = [
    ["recall", "deploy token", "-k", "2"],
    ["recall", "health probe port", "--mode", "fulltext", "--top=1", "--json"],
    ["-q", "recall", "deploy", "--kind", "user", "--kind=assistant", "--since", "30d"],
    ["recall", "deploy", "--block", "--budget", "500", "--window", "100000"],
    ["recall", "deploy token", "--min-score", "0.99"],            # nothing clears it: exit 3
    ["recall", "zebra crossing"],                                 # nothing found: exit 3
    ["recall", "the of and"],                                     # stop words only: exit 3
    ["recall", "deploy", "--hops", "3"],                          # recall's own usage error: exit 2
    ["recall", "deploy", "--mode", "bogus"],
    ["recall", "deploy", "--session", "no-such-session"],
    ["recall", "deploy", "--since", "not a time"],
    ["recall"],                                                   # neither QUERY nor --queries
    ["recall", "deploy", "--mmr", "0.5", "--hops", "2"],
]


@pytest.mark.parametrize("args", PLAIN, ids=[" ".join(a) for a in PLAIN])
def test_a_plain_recall_prints_the_same_bytes_and_exits_alike_on_both_paths(store, args):
    assert parse(args) is not None
    quick = run_captured(run_quick, args)
    full = run_captured(full_main, args)
    assert (quick.code, quick.out, quick.err) == (full.code, full.out, full.err)


def test_global_options_anywhere_and_a_queries_file_alike_on_both_paths(store):
    home = os.environ["TRACE_HOME"]
    runs = {}
    for args in (["--store", home, "recall", "deploy"], ["recall", "deploy", f"--store={home}", "--quiet"],
                 ["recall", "--queries", str(store / "q.jsonl")], ["recall", "-q", "--queries", str(store / "q.jsonl")]):
        quick, full = run_captured(run_quick, args), run_captured(full_main, args)
        assert (quick.code, quick.out, quick.err) == (full.code, full.out, full.err), args
        runs[" ".join(args[:2])] = quick
    loud, quiet = runs["recall --queries"], runs["recall -q"]
    assert loud.code == quiet.code == 1 and "line 2" in loud.err and "line 2" in quiet.err   # errors print either way
    assert "line 3: no hits" in loud.err and "no hits" not in quiet.err                        # notes only without -q


@pytest.mark.parametrize("args", [
    ["recall", "--help"], ["recall", "x", "-h"], ["--version", "recall", "x"], ["recall", "x", "-k", "0"],
    ["recall", "x", "-k5"], ["recall", "x", "-k", "five"], ["recall", "--", "-x"], ["recall", "a", "b"],
    ["recall", "x", "--json=1"], ["recall", "x", "--bogus"], ["recall", "x", "--session"],
    ["recall", "x", "--since", "-3d"], ["recall", "x", "--mmr", "nan"], ["stats"], [],
    ["recall", "x\udcff"], ["-k", "3", "recall", "x"],
])
def test_anything_else_goes_to_the_full_cli(args):
    assert parse(args) is None


def test_a_cold_plain_recall_never_loads_typer_nor_the_ingest_drafts(store):
    probe = ("import sys\nsys.argv = ['trace', 'recall', 'deploy token', '-k', '1']\n"
             "from trace_cli.entry import main\ncode = main()\n"
             "sys.stderr.write(f'exit {code} typer {\"typer\" in sys.modules} drafts {\"reducers.drafts\" in sys.modules}')\n")
    env = dict(os.environ, TRACE_SERVE="0")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.stderr.endswith("exit 0 typer False drafts False"), done.stderr
    assert "deploy token" in done.stdout
