"""Cold start: what a fresh `trace` process costs before and while it
answers. Each command runs `runs` times as a new process (median wall and
CPU, the largest peak RSS); the peer, in the same run, is the bare
interpreter (`python -c pass`), the floor any Python CLI pays, and a cold
`trace recall` is also compared with `trace --help` (what the query itself
adds to starting up). The store for recall is built from the recall
bench's generated sessions."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

from trace_cli.bench.process import repeated
from trace_cli.bench.recall_bench import _build


def run_startup_bench(store_events: int, runs: int, note: Callable[[str], None],
                      workdir: str | None = None) -> list[dict]:
    trace = str(Path(sys.executable).with_name("trace"))
    base = Path(tempfile.mkdtemp(prefix="trace-bench-startup-", dir=workdir))
    try:
        note(f"cold start: a store of {store_events} events for a cold recall")
        store, needles, _ = _build(base, store_events, seed=7)
        query = needles[0].query
        commands = [("python -c pass", [sys.executable, "-c", "pass"]),
                    ("trace --help", [trace, "--help"]),
                    ("trace --version", [trace, "--version"]),
                    ("trace recall --mode fulltext", [trace, "--store", str(store), "recall", query, "--mode",
                                                      "fulltext", "--json"]),
                    ("trace recall --mode hybrid", [trace, "--store", str(store), "recall", query, "--mode",
                                                    "hybrid", "--json"])]
        rows = []
        for label, argv in commands:
            note(f"cold start: {label} x{runs}")
            rows.append({"bench": "cold-start", "command": label,
                         "store_events": store_events if "recall" in label else None, **repeated(argv, runs)})
        interp, helped = rows[0]["wall_ms_median"], rows[1]["wall_ms_median"]
        for r in rows[1:]:
            r["vs_interpreter"] = round(r["wall_ms_median"] / interp, 2)
            if "recall" in r["command"]:
                r["vs_help"] = round(r["wall_ms_median"] / helped, 2)
        return rows
    finally:
        shutil.rmtree(base, ignore_errors=True)
