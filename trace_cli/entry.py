"""The `trace` executable's first step: hand the command to the resident
server when one is running (trace_cli/resident), else run it here (a
plain `trace recall` without Typer: trace_cli/quick_recall.py, unless
TRACE_QUICK_RECALL=0 asks for the full CLI: tests run the same argv both
ways, and a user can rule the quick path out). Kept to what Python has
loaded anyway, so running here costs nothing extra."""
from __future__ import annotations

import os
import sys


def main() -> int:
    # One BLAS thread unless the user chose: TRACE's numpy work is a few
    # small vectors a call, and the worker threads OpenBLAS starts when
    # numpy loads spin on the other cores (~0.1 s of CPU a cold hybrid
    # `trace recall` at 100k events: 0.52 -> 0.42 s, the same wall time).
    # The mark lets a command a sweep runs (--llm-cmd) get the user's
    # environment back: its BLAS may want every core.
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.environ["TRACE_SET_OPENBLAS_THREADS"] = "1"
    from trace_cli.resident.client import command_name, run_resident
    code = run_resident(sys.argv[1:])
    if code is None and command_name(sys.argv[1:]) == "recall" and os.environ.get("TRACE_QUICK_RECALL") != "0":
        from trace_cli.quick_recall import run_quick      # a plain recall, without loading Typer
        code = run_quick(sys.argv[1:])
    if code is None:
        from trace_cli.app import main as run_here
        code = run_here()
    return code
