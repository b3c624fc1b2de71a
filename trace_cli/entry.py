"""The `trace` executable's first step: hand the command to the resident
server when one is running (trace_cli/resident), else run it here. Kept
to what Python has loaded anyway, so running here costs nothing extra."""
from __future__ import annotations

import sys


def main() -> int:
    from trace_cli.resident.client import run_resident
    code = run_resident(sys.argv[1:])
    if code is None:
        from trace_cli.app import main as run_here
        code = run_here()
    return code
