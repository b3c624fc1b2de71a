"""`trace bench all`: every benchmark in one run, each section in its own
process (trace_cli/bench/section.py), into one report: the plan, the
machine and its load before and after, each section's rows (or why it was
skipped), its wall time and peak RSS, and a headline of ratios against the
peers measured in the same run, which are what survive a loaded machine."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import orjson

from trace_cli.bench.corpus import REPO
from trace_cli.bench.process import run_measured
from trace_cli.bench.suite import SECTIONS, TITLES, Plan

SCHEMA = 1


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def _machine() -> dict:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "load_before": [round(x, 2) for x in os.getloadavg()]}


def _section(name: str, plan: Plan, note: Callable[[str], None]) -> dict:
    note(f"== {name}: {TITLES[name]}")
    run = run_measured([sys.executable, "-m", "trace_cli.bench.section", name,
                        orjson.dumps(plan.as_json()).decode()], capture_stderr=False)
    lines = run.stdout.strip().splitlines()
    try:
        out = orjson.loads(lines[-1]) if lines else {}
    except orjson.JSONDecodeError:
        out = {}
    section = {"name": name, "title": TITLES[name], "wall_s": round(run.wall_ms / 1000, 1),
               "cpu_s": round(run.cpu_ms / 1000, 1), "peak_rss_mb": round(run.peak_rss_mb, 1)}
    if "rows" in out:
        section.update(status="ok", rows=out["rows"])
    elif "skipped" in out:
        section.update(status="skipped", reason=out["skipped"], rows=[])
    else:
        section.update(status="error", rows=[],
                       reason=out.get("error") or f"the section's process exited {run.returncode}")
    note(f"== {name}: {section['status']} in {section['wall_s']} s"
         + (f" ({section['reason']})" if section.get("reason") else ""))
    return section


def run_all(plan: Plan, note: Callable[[str], None], only: list[str] | None = None,
            command: str = "trace bench all", partial: Callable[[dict], None] | None = None) -> dict:
    """Run the sections in order; `partial` gets the report so far after
    each one (so a run stopped early still leaves what it measured)."""
    names = [n for n in SECTIONS if not only or n in only]
    own_workdir = plan.workdir is None
    if own_workdir:
        plan.workdir = tempfile.mkdtemp(prefix="trace-bench-all-")
    Path(plan.workdir).mkdir(parents=True, exist_ok=True)
    started = datetime.now(timezone.utc)
    report = {"trace_bench_all": SCHEMA, "command": command, "commit": _commit(),
              "started": started.isoformat(timespec="seconds"), "machine": _machine(), "plan": plan.as_json()}
    try:
        t = time.perf_counter()
        report["sections"] = []
        for name in names:
            report["sections"].append(_section(name, plan, note))
            report["wall_s"] = round(time.perf_counter() - t, 1)
            if partial and len(report["sections"]) < len(names):
                partial({**report, "partial": True, "headline": headline(report["sections"]),
                         "machine": {**report["machine"], "load_after": [round(x, 2) for x in os.getloadavg()]}})
    finally:
        if own_workdir:
            shutil.rmtree(plan.workdir, ignore_errors=True)
    report["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["headline"] = headline(report["sections"])
    return report


def _rows(sections: list[dict], name: str) -> list[dict]:
    return next((s["rows"] for s in sections if s["name"] == name), [])


def headline(sections: list[dict]) -> list[dict]:
    """The figures to read first: each with the peer it was measured
    against in the same run and the ratio (TRACE over the peer)."""
    out: list[dict] = []

    def add(section, figure, value, unit, peer, peer_value, ratio, better):
        out.append({"section": section, "figure": figure, "value": value, "unit": unit, "peer": peer,
                    "peer_value": peer_value, "ratio": ratio, "better": better})
    ingest = {(r["size"], r["phase"]): r for r in _rows(sections, "ingest")}
    for phase, label in (("append", "log-only append"), ("ingest", "full ingest (parse, redact, index)")):
        r, fts, sql = ingest.get(("100%", phase)), ingest.get(("100%", "sqlite+fts5")), ingest.get(("100%", "sqlite"))
        if r and sql:
            add("ingest", f"{label}, {r['events']} events", r["events_per_s_median"], "events/s",
                "SQLite inserts", sql["events_per_s_median"], r.get("vs_sqlite"), "higher")
        if r and fts:
            add("ingest", f"{label}, {r['events']} events", r["events_per_s_median"], "events/s",
                "SQLite + FTS5 index", fts["events_per_s_median"], r.get("vs_sqlite_fts5"), "higher")
    for r in _rows(sections, "recall"):
        n = r["events"]
        add("recall", f"fulltext recall p50, {n} events", r["fulltext_p50_ms"], "ms", "SQLite FTS5 p50",
            r["fts5_p50_ms"], r["fulltext_vs_fts5"], "lower")
        if "tantivy_p50_ms" in r:
            add("recall", f"fulltext recall p50, {n} events", r["fulltext_p50_ms"], "ms", "raw Tantivy p50",
                r["tantivy_p50_ms"], r["fulltext_vs_tantivy"], "lower")
            add("recall", f"hybrid recall p50, {n} events", r["hybrid_p50_ms"], "ms", "raw Tantivy p50",
                r["tantivy_p50_ms"], r["hybrid_vs_tantivy"], "lower")
        for mode in ("fulltext", "hybrid"):
            if f"cold_{mode}_cpu_ms" in r and r.get("cold_tantivy_cpu_ms"):
                add("recall", f"cold trace recall --mode {mode} (CPU), {n} events", r[f"cold_{mode}_cpu_ms"], "ms",
                    "a cold raw Tantivy process (CPU)", r["cold_tantivy_cpu_ms"],
                    round(r[f"cold_{mode}_cpu_ms"] / r["cold_tantivy_cpu_ms"], 2), "lower")
        for tool, label in (("grep", "grep -F"), ("rg", "ripgrep")):
            if f"{tool}_p50_ms" in r:
                add("recall", f"exact needle p50, {n} events", r["exact_p50_ms"], "ms", f"{label} over the segments",
                    r[f"{tool}_p50_ms"], round(r["exact_p50_ms"] / max(r[f"{tool}_p50_ms"], 1e-6), 4), "lower")
    needle = {r["strategy"]: r for r in _rows(sections, "needle") if r["bench"] == "needle"}
    if "pointer" in needle:
        for peer in ("truncate", "narrative"):
            if peer in needle:
                add("needle", "needle recall@10, pointer compaction", needle["pointer"]["recall_at_10"], "",
                    peer, needle[peer]["recall_at_10"],
                    round(needle["pointer"]["recall_at_10"] / max(needle[peer]["recall_at_10"], 1e-9), 2), "higher")
    locomo = _rows(sections, "locomo")
    if len(locomo) == 2:
        add("locomo", "LoCoMo dev turn-level recall@10", locomo[0]["recall_at_10"], "", "SQLite FTS5",
            locomo[1]["recall_at_10"], locomo[0]["vs_fts5_recall"], "higher")
    cold = {r["command"]: r for r in _rows(sections, "cold_start")}
    for cmd in ("trace --help", "trace recall --mode fulltext", "trace recall --mode hybrid"):
        if cmd in cold:
            add("cold_start", cmd, cold[cmd]["wall_ms_median"], "ms", "python -c pass",
                cold["python -c pass"]["wall_ms_median"], cold[cmd]["vs_interpreter"], "lower")
    context = [r for r in _rows(sections, "context") if r["bench"] == "context" and r.get("vs_full_read")]
    for r in context[-2:]:
        add("context", f"trace context, {r['events']}-event session, {r['state']}", r["median_ms"], "ms",
            "reading the whole session", r["full_read_ms"], r["vs_full_read"], "lower")
    sweep = [r for r in _rows(sections, "sweep") if r["size"] == "100%"]
    for r in sweep:
        add("sweep", f"nightly sweep, {r['events']} events", r["events_per_s_median"], "events/s",
            "plain scan of the log", r["scan_events_per_s"], r["vs_scan"], "higher")
    for r in _rows(sections, "redact"):
        if r["phase"] != "peer" and r["vs_peer"]:
            add("redact", f"redaction of every {'string' if r['phase'] == 'texts' else 'record'} of the transcripts",
                r["cpu_s_median"], "s CPU", "one lowercasing pass over the same texts",
                round(r["cpu_s_median"] / r["vs_peer"], 4) if r["vs_peer"] else None, r["vs_peer"], "lower")
    for r in _rows(sections, "hooks"):
        add("hooks", f"Stop hook p95, {r['session_events']}-event session", r["hook_p95_ms"], "ms",
            "trace --help p95", r["peer_cli_start_p95_ms"], r["hook_p95_vs_peer_p95"], "lower")
    return out
