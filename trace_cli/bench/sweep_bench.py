"""`trace bench sweep`: the nightly sweep over the shared real transcripts
replicated to --events (ingested first, without vectors), at 10% and 100%
of that size, each phase in its own process so its peak memory is its own.

The peer is a plain scan of the same log (read and parse every event, the
floor any sweep pays), run in the same script minutes apart: `vs_scan` is
the sweep's rate over the scan's, comparable across machines. One copy of
the corpus is swept first on its own: its rate is the sweep on text it has
never seen (replicas repeat text, which the extractor reads once)."""
from __future__ import annotations

import math
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Callable

from trace_cli.bench.corpus import replicate, shared_transcripts
from trace_cli.bench.ingest_bench import _worker


def run_sweep_bench(events: int, corpus: str | None, workdir: str | None, repeat: int,
                    note: Callable[[str], None]) -> list[dict]:
    root = shared_transcripts(corpus)
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-bench-sweep-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        note(f"workdir {base}; corpus {root}")
        one = replicate(root, base / "corpus", 1)
        probe = base / "probe-store"
        shutil.rmtree(probe, ignore_errors=True)
        per_copy = _worker("ingest", str(probe), *map(str, one))["events"]
        first = _worker("sweep", str(probe))
        note(f"one copy ({first['events']} events, text never seen before): "
             f"{first['events'] / first['seconds']:.0f} events/s")
        copies = max(1, math.ceil(events / per_copy))
        dirs = replicate(root, base / "corpus", copies)
        rows = [_row("1 copy", [first], [_worker("scan", str(probe))])]
        for label, d in (("10%", dirs[:max(1, copies // 10)]), ("100%", dirs)):
            store = base / f"store-{label.rstrip('%')}"
            shutil.rmtree(store, ignore_errors=True)
            note(f"[{label}] ingesting {len(d)} corpus copies (no vectors)")
            _worker("ingest", str(store), *map(str, d))
            sweeps, scans = [], []
            for rep in range(repeat):
                note(f"[{label}] run {rep + 1}/{repeat}: scan, then sweep")
                scans.append(_worker("scan", str(store)))
                for name in ("ledger.jsonl", "knowledge.jsonl", "episodes.jsonl", "tuning.json", "sweep"):
                    path = store / name
                    shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
                sweeps.append(_worker("sweep", str(store)))
            rows.append(_row(label, sweeps, scans))
            shutil.rmtree(store, ignore_errors=True)
        small, full = rows[-2], rows[-1]
        if small["peak_anon_mb_max"] and full["peak_anon_mb_max"]:
            full["anon_growth_vs_10pct"] = round(full["peak_anon_mb_max"] / small["peak_anon_mb_max"], 2)
        full["rss_growth_vs_10pct"] = round(full["peak_rss_mb_max"] / small["peak_rss_mb_max"], 2)
        return rows
    finally:
        shutil.rmtree(base / "probe-store", ignore_errors=True)
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)


def _row(size: str, sweeps: list[dict], scans: list[dict]) -> dict:
    rate = statistics.median(r["events"] / r["seconds"] for r in sweeps if r["seconds"] > 0)
    scan_rate = statistics.median(r["events"] / r["seconds"] for r in scans if r["seconds"] > 0)
    anon = [r["anon_mb"] for r in sweeps if r.get("anon_mb") is not None]
    return {"bench": "sweep", "size": size, "events": sweeps[0]["events"], "runs": len(sweeps),
            "events_per_s_median": round(rate), "seconds_median": round(statistics.median(r["seconds"] for r in sweeps), 3),
            "scan_events_per_s": round(scan_rate), "vs_scan": round(rate / scan_rate, 4),
            "peak_rss_mb_max": round(max(r["rss_mb"] for r in sweeps), 1),
            "peak_anon_mb_max": round(max(anon), 1) if anon else None,
            "decisions": sweeps[-1].get("decisions"), "facts_live": sweeps[-1].get("facts_live"),
            "episodes": sweeps[-1].get("episodes")}
