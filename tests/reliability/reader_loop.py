"""A reader for the concurrency test: runs read commands in a loop (in
process) until a stop file appears, then prints a JSON summary of exit
codes and anything that looked like a crash.

    python -m tests.reliability.reader_loop STORE STOPFILE
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

READS = [
    ["recall", "where is config_1_1.yaml", "-k", "3"],
    ["recall", "config_2_2.yaml", "--mode", "fulltext"],
    ["stats"],
    ["show", "1..5"],
    ["verify", "--skip-artifacts"],
    ["export"],
]


def main() -> None:
    from tests.helpers import cli
    store, stop = sys.argv[1], Path(sys.argv[2])
    codes: dict[str, dict[str, int]] = {}
    crashes: list[str] = []
    failed: list[str] = []          # what a non-zero exit said (a rare race is then readable)
    partial = 0
    rounds = 0
    while not stop.exists() or rounds == 0:
        for args in READS:
            run = cli("--store", store, *args)
            name = args[0] if args[0] != "recall" else f"recall:{args[-1]}"
            codes.setdefault(name, {}).setdefault(str(run.code), 0)
            codes[name][str(run.code)] += 1
            if run.code not in (0, 4):
                failed.append(f"{name} exit {run.code}: {run.err[-300:]}")
            if any(s in run.err for s in ("Traceback", "please report", "panicked")):
                crashes.append(f"{args[0]}: {run.err[-300:]}")
            for line in run.out.splitlines():
                if args[0] in ("export", "show") and not (line.startswith("{") and line.endswith("}")):
                    partial += 1                 # a reader must never see half an event
        rounds += 1
    print(json.dumps({"rounds": rounds, "codes": codes, "crashes": crashes[:5], "failed": failed[:5],
                      "partial": partial}))


if __name__ == "__main__":
    main()
