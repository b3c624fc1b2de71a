"""LoCoMo dev, measured exactly as ../shared/tools/README.md says (convert,
`trace ingest --format openai`, `trace recall --queries -k 10 --json`,
score turn-level recall@10), with each CLI step timed as its own process.
The peer, in the same run: SQLite FTS5 over the same turns, queried with
an OR of each question's words ordered by rank, scored by the same script.
Skipped, with the reason, when ../shared has no LoCoMo dev set."""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from trace_cli.bench.process import run_measured

SCORE = re.compile(r"R@(\d+)=([0-9.]+) \(([^;]*);")


def locomo_inputs(shared: Path) -> tuple[Path, Path, Path] | str:
    """(data, converter, scorer), or why LoCoMo cannot run here."""
    data = shared / "data" / "locomo-dev" / "locomo-dev.json"
    tools = shared / "tools"
    convert, score = tools / "locomo_to_chat.py", tools / "score_locomo.py"
    for path in (data, convert, score):
        if not path.is_file():
            return f"LoCoMo dev not found: {path} is missing (clone ../shared beside the repo or set TRACE_SHARED)"
    return data, convert, score


def _score(scorer: Path, questions: Path, hits: Path) -> dict:
    done = subprocess.run([sys.executable, str(scorer), str(questions), str(hits), "10", "0"],
                          capture_output=True, text=True)
    m = SCORE.search(done.stdout)
    if not m:
        raise RuntimeError(f"score_locomo.py printed no score: {done.stdout.strip()[-300:]} {done.stderr[-300:]}")
    cats = dict(part.split("=") for part in m.group(3).split())
    return {"recall_at_10": float(m.group(2)), **{f"recall_at_10_{c}": float(v) for c, v in cats.items()}}


def _fts5_hits(lc: Path, out: Path) -> tuple[float, float]:
    """The FTS5 peer's hits in `trace recall --json` layout; returns (build
    seconds, median ms per query)."""
    from reducers.terms import query_words
    db = sqlite3.connect(lc / "fts5.db")
    db.execute("CREATE VIRTUAL TABLE turns USING fts5(text)")
    t = time.perf_counter()
    with open(lc / "sessions.jsonl") as f:
        for line in f:
            db.executemany("INSERT INTO turns(text) VALUES (?)",
                           ((m["content"],) for m in json.loads(line)["messages"]))
    db.commit()
    build = time.perf_counter() - t
    times = []
    with open(lc / "questions.jsonl") as f, open(out, "w") as o:
        for line in f:
            q = json.loads(line)
            words = query_words(q["query"])
            t = time.perf_counter()
            rows = db.execute("SELECT text FROM turns WHERE turns MATCH ? ORDER BY rank LIMIT 10",
                              (" OR ".join(f'"{w}"' for w in words),)).fetchall() if words else []
            times.append((time.perf_counter() - t) * 1000)
            o.writelines(json.dumps({"query_id": q["id"], "rank": i + 1, "text": r[0]}) + "\n"
                         for i, r in enumerate(rows))
    db.close()
    return build, statistics.median(times) if times else 0.0


def run_locomo_bench(shared: Path, repeat: int, note: Callable[[str], None], quick: bool = False,
                     workdir: str | None = None) -> list[dict]:
    found = locomo_inputs(shared)
    if isinstance(found, str):
        raise FileNotFoundError(found)
    data, convert, scorer = found
    trace = str(Path(sys.executable).with_name("trace"))
    base = Path(tempfile.mkdtemp(prefix="trace-bench-locomo-", dir=workdir))
    try:
        if quick:                                   # a smoke test: the first conversation only
            source = base / "locomo-first.json"
            source.write_text(json.dumps(json.loads(data.read_text())[:1]))
        else:
            source = data
        lc, store = base / "lc", base / "store"
        subprocess.run([sys.executable, str(convert), str(source), str(lc)], check=True, capture_output=True)
        questions = lc / "questions.jsonl"
        n_questions = sum(1 for line in open(questions) if line.strip())
        note(f"LoCoMo dev: ingest ({'first conversation' if quick else 'all conversations'})")
        ingest = run_measured([trace, "--store", str(store), "ingest", "--format", "openai", str(lc / "sessions.jsonl")])
        if ingest.returncode != 0:
            raise RuntimeError(f"trace ingest of LoCoMo exited {ingest.returncode}")
        runs = []
        for rep in range(repeat):
            note(f"LoCoMo dev: recall of {n_questions} questions, run {rep + 1}/{repeat}")
            runs.append(run_measured([trace, "--store", str(store), "recall", "--queries", str(questions),
                                      "-k", "10", "--json"]))
            if runs[-1].returncode != 0:
                raise RuntimeError(f"trace recall --queries exited {runs[-1].returncode}")
        (base / "hits.jsonl").write_text(runs[-1].stdout)
        trace_score = _score(scorer, questions, base / "hits.jsonl")
        note("LoCoMo dev: the SQLite FTS5 peer on the same turns")
        build, fts_ms = _fts5_hits(lc, base / "fts5-hits.jsonl")
        fts_score = _score(scorer, questions, base / "fts5-hits.jsonl")
        wall = statistics.median(r.wall_ms for r in runs)
        events = sum(len(json.loads(line)["messages"]) for line in open(lc / "sessions.jsonl"))
        return [{"bench": "locomo", "system": "trace (hybrid)", "conversations": "first" if quick else "all",
                 "turns": events, "questions": n_questions, **trace_score,
                 "ingest_s": round(ingest.wall_ms / 1000, 2), "ingest_peak_rss_mb": round(ingest.peak_rss_mb, 1),
                 "recall_runs": repeat, "recall_process_s_median": round(wall / 1000, 2),
                 "ms_per_question_process": round(wall / max(n_questions, 1), 2),
                 "recall_peak_rss_mb": round(max(r.peak_rss_mb for r in runs), 1),
                 "vs_fts5_recall": round(trace_score["recall_at_10"] / max(fts_score["recall_at_10"], 1e-9), 3)},
                {"bench": "locomo", "system": "SQLite FTS5 (peer)", "conversations": "first" if quick else "all",
                 "turns": events, "questions": n_questions, **fts_score, "ingest_s": round(build, 2),
                 "query_ms_median": round(fts_ms, 2)}]
    finally:
        shutil.rmtree(base, ignore_errors=True)
