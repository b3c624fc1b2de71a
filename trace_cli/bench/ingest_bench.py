"""`trace bench ingest`: log-only append and full real-transcript ingest
(parse, redact, tokens, artifacts, log, dedupe state, full-text index; with
--embed also the vector index), with SQLite (one transaction per 1,000
rows) as the peer on the same events, and SQLite with an FTS5 index over
the same texts as the fair peer (it too leaves the events searchable).

Each phase runs in its own process (peak RSS is that phase's alone), and
the small and full sizes are both measured so "memory flat in input size"
is a comparison, not a claim. Two peaks are reported: the resident set
(`peak_rss_mb_max`, which also counts index files Tantivy memory-maps while
a background merge reads them: page cache, dropped under pressure) and
anonymous memory (`peak_anon_mb_max`, what the process allocated)."""
from __future__ import annotations

import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import orjson

from trace_cli.bench.corpus import replicate, shared_transcripts


def _worker(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trace_cli.bench.worker", *args],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench worker {args[0]} failed: {proc.stderr.strip()[-2000:]}")
    return orjson.loads(proc.stdout.strip().splitlines()[-1])


def run_ingest_bench(events: int, corpus: str | None, workdir: str | None, repeat: int,
                     note: Callable[[str], None], embed: bool = False) -> list[dict]:
    root = shared_transcripts(corpus)
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        note(f"workdir {base}; corpus {root}")
        one = replicate(root, base / "corpus", 1)
        shutil.rmtree(base / "probe-store", ignore_errors=True)
        probe = _worker("ingest", str(base / "probe-store"), *map(str, one))
        note(f"one copy of the corpus, cold (nothing memoised yet): {probe['events'] / probe['seconds']:.0f} events/s")
        per_copy = probe["events"]
        template = base / "template.jsonl"
        from stores.log.lookup import export_events
        from stores.store import Store
        with open(template, "wb") as f:
            for e in export_events(Store(base / "probe-store"), with_artifacts=False):
                f.write(orjson.dumps(e) + b"\n")
        copies = max(1, math.ceil(events / per_copy))
        note(f"{per_copy} events per copy of the corpus; replicating {copies} copies for >= {events} events")
        dirs = replicate(root, base / "corpus", copies)
        small_copies = max(1, copies // 10)
        rows = []
        for size_label, n, d in (("10%", max(events // 10, 1), dirs[:small_copies]), ("100%", events, dirs)):
            for rep in range(repeat):
                note(f"[{size_label}] run {rep + 1}/{repeat}: log-only append of {n} events")
                rows.append({"size": size_label, **_fresh(base, lambda s: _worker("append", s, str(template), str(n)))})
                note(f"[{size_label}] run {rep + 1}/{repeat}: SQLite peer, {n} rows")
                rows.append({"size": size_label, **_fresh(base, lambda s: _worker("sqlite", s + ".db", str(template), str(n)))})
                note(f"[{size_label}] run {rep + 1}/{repeat}: SQLite + FTS5 peer, {n} rows")
                rows.append({"size": size_label,
                             **_fresh(base, lambda s: _worker("sqlite+fts5", s + ".db", str(template), str(n)))})
                phase = "ingest+embed" if embed else "ingest"
                note(f"[{size_label}] run {rep + 1}/{repeat}: full {phase} of {len(d)} corpus copies")
                rows.append({"size": size_label, **_fresh(base, lambda s: _worker(phase, s, *map(str, d)))})
        return _summarise(rows)
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)


def _fresh(base: Path, run):
    target = base / "run-store"
    shutil.rmtree(target, ignore_errors=True)
    Path(str(target) + ".db").unlink(missing_ok=True)
    Path(str(target) + ".db-wal").unlink(missing_ok=True)
    try:
        return run(str(target))
    finally:
        shutil.rmtree(target, ignore_errors=True)
        for suffix in (".db", ".db-wal", ".db-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)


def _summarise(rows: list[dict]) -> list[dict]:
    out = []
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["size"], r["phase"]), []).append(r)
    for (size, phase), rs in groups.items():
        rates = [r["events"] / r["seconds"] for r in rs if r["seconds"] > 0]
        out.append({"bench": "ingest", "size": size, "phase": phase, "events": rs[0]["events"],
                    "runs": len(rs), "events_per_s_median": round(statistics.median(rates)),
                    "seconds_median": round(statistics.median(r["seconds"] for r in rs), 3),
                    "peak_rss_mb_max": round(max(r["rss_mb"] for r in rs), 1),
                    "peak_anon_mb_max": _max_or_none(r.get("anon_mb") for r in rs),
                    **_bytes_per_event(rs[-1])})
    by = {(r["size"], r["phase"]): r for r in out}
    phase = "ingest+embed" if ("100%", "ingest+embed") in by else "ingest"
    for size in ("10%", "100%"):
        s, fts = by.get((size, "sqlite")), by.get((size, "sqlite+fts5"))
        for r in (by.get((size, "append")), by.get((size, phase))):
            if r and s:       # the peer runs on the same machine minutes apart: a figure across days
                r["vs_sqlite"] = round(r["events_per_s_median"] / s["events_per_s_median"], 3)
            if r and fts:
                r["vs_sqlite_fts5"] = round(r["events_per_s_median"] / fts["events_per_s_median"], 3)
    small, full = by.get(("10%", phase)), by.get(("100%", phase))
    if small and full:
        full["rss_growth_vs_10pct"] = round(full["peak_rss_mb_max"] / small["peak_rss_mb_max"], 2)
        if small["peak_anon_mb_max"] and full["peak_anon_mb_max"]:
            full["anon_growth_vs_10pct"] = round(full["peak_anon_mb_max"] / small["peak_anon_mb_max"], 2)
    return out


def _bytes_per_event(run: dict) -> dict:
    """The store's size on disk per event, by part (a full ingest only)."""
    parts = run.get("store_bytes")
    if not parts or not run["events"]:
        return {}
    return {"bytes_per_event": round(sum(parts.values()) / run["events"]),
            "bytes_per_event_by_part": {k: round(v / run["events"]) for k, v in parts.items()}}


def _max_or_none(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(max(values), 1) if values else None
