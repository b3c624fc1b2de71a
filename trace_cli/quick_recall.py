"""`trace recall` without Typer. Hooks and scripts start `trace recall`
once per question, and importing Typer and building its command cost
about a quarter of such a run (README, "Speed"). A plain invocation, every
argument one this parser knows written in one of the usual forms, is read
here and runs the same code as the command (trace_cli/recall_answer.py);
anything else (--help, an unknown option, a value Click would refuse, `--`,
a combined short flag) returns None and goes to the full CLI, which says
what is wrong in its own words. tests/test_quick_recall.py checks that
this table matches the command's options; tests/test_quick_recall_parity.py
runs the same lines through both paths (TRACE_QUICK_RECALL=0 rules this
one out) and holds them to the same exit code, stdout and stderr."""
from __future__ import annotations

import math
from typing import Callable

from trace_cli.global_options import COMMAND_FLAG, GLOBAL_FLAGS, GLOBAL_WITH_VALUE
from trace_cli.recall_answer import DEFAULTS


class _Refused(Exception):
    """A value Click would refuse: left to the full CLI to say so."""


def _at_least_one(text: str) -> int:
    value = int(text)                     # as Click reads an int
    if value < 1:
        raise _Refused(text)
    return value


def _float(text: str) -> float:
    value = float(text)                   # as Click reads a float
    if math.isnan(value):
        raise _Refused(text)              # nan compares false with every bound: leave it to Click's path
    return value


# The command's options that take a value: each name, the DEFAULTS key it
# sets and how Click would read its value. `--kind` may repeat.
VALUES: dict[str, tuple[str, Callable]] = {
    "-k": ("k", _at_least_one), "--top": ("k", _at_least_one),
    "--session": ("session", str), "-s": ("session", str),
    "--kind": ("kind", str), "--since": ("since", str), "--until": ("until", str), "--mode": ("mode", str),
    "--hops": ("hops", int), "--min-score": ("min_score", _float), "--mmr": ("mmr", _float),
    "--queries": ("queries", str), "--budget": ("budget", _at_least_one), "--window": ("window", _at_least_one),
}
FLAGS = {"--rerank": "rerank", "--block": "block", "--json": "json"}
# The global options, anywhere on the line, as trace_cli/global_options.py
# moves them for Click (`-q` too: recall has no -q of its own).
QUIET = (*GLOBAL_FLAGS, "-q")


def parse(argv: list[str]) -> tuple[str | None, bool, bool, dict] | None:
    """(store, quiet, json, the command's options) for a plain `trace
    recall` line; None for anything the full CLI should read."""
    store: str | None = None
    quiet = json_out = False
    options = dict(DEFAULTS)
    seen_command = False
    i = 0
    try:
        while i < len(argv):
            arg = argv[i]
            arg.encode("utf-8")              # not UTF-8: the full CLI names it
            name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            if name in GLOBAL_WITH_VALUE or name in VALUES:
                if not seen_command and name not in GLOBAL_WITH_VALUE:
                    return None
                if eq:
                    value, i = attached, i + 1
                elif i + 1 < len(argv) and (argv[i + 1] == "-" or not argv[i + 1].startswith("-")):   # `--queries -`: stdin
                    value, i = argv[i + 1], i + 2
                else:
                    return None
                if name in GLOBAL_WITH_VALUE:         # --store, the one there is
                    store = value
                    continue
                key, read = VALUES[name]
                if key == "kind":
                    options["kind"] = [*(options["kind"] or []), value]
                else:
                    options[key] = read(value)
                continue
            if eq:
                return None                  # a flag given a value
            if arg in QUIET:
                quiet = True
            elif arg in FLAGS and (seen_command or arg == COMMAND_FLAG):     # `trace --json recall x` too
                if FLAGS[arg] == "json":
                    json_out = True
                else:
                    options[FLAGS[arg]] = True
            elif arg.startswith("-"):
                return None                  # --help, `--`, `-`, -k5, an unknown option
            elif not seen_command:
                if arg != "recall":
                    return None
                seen_command = True
            elif options["query"] is None:
                options["query"] = arg
            else:
                return None                  # a second QUERY: Click's usage error
            i += 1
    except (ValueError, _Refused, UnicodeEncodeError):
        return None
    return (store, quiet, json_out, options) if seen_command else None


def run_quick(argv: list[str]) -> int | None:
    """The exit code of a plain `trace recall` run here; None when the
    full CLI should run it."""
    parsed = parse(argv)
    if parsed is None:
        return None
    from trace_cli.app_state import AppState
    from trace_cli.invocation import guarded, started
    from trace_cli.recall_answer import answer
    refused = started()
    if refused is not None:
        return refused
    store_path, quiet, json_out, options = parsed

    def body() -> int:
        state = AppState(store_path, quiet)
        out = state.output(json_out)
        return answer(out, state.store(out), **options)
    return guarded(body)
