"""One section of `trace bench all` in its own process, so its peak memory
is its own:  python -m trace_cli.bench.section NAME PLAN_JSON
Progress goes to stderr; the last stdout line is one JSON object:
{"rows": [...]}, {"skipped": reason} or {"error": message}."""
from __future__ import annotations

import sys

import orjson


def main(argv: list[str]) -> None:
    from trace_cli.app import tune_gc
    from trace_cli.bench.suite import SECTIONS, Plan, Skip
    tune_gc()                              # as the `trace` command does
    name, plan = argv[0], Plan(**orjson.loads(argv[1]))

    def note(message: str) -> None:
        print(f"[{name}] {message}", file=sys.stderr, flush=True)
    try:
        out = {"rows": SECTIONS[name](plan, note)}
    except Skip as why:
        out = {"skipped": str(why)}
    except Exception as e:                 # reported in the run's JSON; the other sections still run
        out = {"error": f"{type(e).__name__}: {e}"[:2000]}
    sys.stdout.write(orjson.dumps(out, default=str).decode() + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
