"""`trace bench recall`: recall latency at several store sizes, against
peers measured in the same run on the same events.

For each size: a store of synthetic agent sessions (trace_cli/bench/
needles.py) with needles spread through it is ingested (each session's
subjects carry its own tag, so a question about a subject has one answer
in the whole store) (embedding on, so
ingest-with-embedding speed is measured too); then, in process, p50/p95 of
recall in fulltext, vector and hybrid mode over the needle questions,
beside raw Tantivy (one stemmed field, the same questions) and SQLite FTS5
over the same texts; the wall and CPU time of a cold `trace recall`
process in fulltext and hybrid mode (bytecode cached, as installed),
beside a cold raw Tantivy process, and of one served by a `trace serve`
the bench starts for itself (CPU: the client's plus its worker's); and for an exact needle (the value
itself), `grep -F` and ripgrep (when it is installed) over the raw
segments — with the recall of each, so "faster" is only claimed at equal
recall. With --rerank, hybrid recall with the optional reranker too (in
process and cold; `rerank_*` columns, and its cost over plain hybrid in
the same run). With --workdir and --reuse, stores an earlier run built are
measured again (the peers are rebuilt each run)."""
from __future__ import annotations

import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import orjson

from trace_cli.bench.needles import Needle, build_session
from trace_cli.bench.process import installed_env, resident_server

TURNS_PER_SESSION = 500
QUERIES = 40
BUILT = "built.json"           # written when a store's build finished: --reuse takes it as it is


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(int(len(values) * p), len(values) - 1)]


def _build(root: Path, events: int, seed: int) -> tuple[Path, list, float]:
    """Write sessions of agent turns (4 events each) with needles, ingest
    them; returns (store dir, needles, ingest events/s)."""
    from stores.store import Store
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    turns = max(events // 4, 1)
    src = root / "sessions.jsonl"
    needles = []
    with open(src, "w") as f:
        done, n = 0, 0
        while done < turns:
            size = min(TURNS_PER_SESSION, turns - done)
            s = build_session(turns=size, needles=max(1, size // 50), flood_words=60, seed=seed + n,
                              tag=f"s{n}", distractors=True, long_output_words=1500 if n % 3 == 2 else 0)
            import json
            f.write(json.dumps({"messages": s.messages}) + "\n")
            needles.extend(s.needles)
            done += size
            n += 1
    store_dir = root / "store"
    t = time.perf_counter()
    added = sum(r.added for r in Store(store_dir).ingest([str(src)]))
    rate = added / (time.perf_counter() - t)
    (root / BUILT).write_bytes(orjson.dumps({"events": events, "seed": seed, "ingest_events_per_s": rate,
                                            "needles": [asdict(n) for n in needles]}))
    return store_dir, needles, rate


def _built(root: Path, events: int, seed: int) -> tuple[Path, list, float] | None:
    """A store an earlier run built here with the same size and seed (it
    wrote BUILT last, so a build stopped half-way is not reused)."""
    try:
        meta = orjson.loads((root / BUILT).read_bytes())
    except (OSError, ValueError):
        return None
    if meta.get("events") != events or meta.get("seed") != seed or not (root / "store").is_dir():
        return None
    return root / "store", [Needle(**n) for n in meta["needles"]], meta["ingest_events_per_s"]


RERANK = "rerank"               # the bench's name for hybrid recall with --rerank


def _recall_mode(mode: str) -> tuple[str, bool]:
    """(recall's --mode, whether to --rerank) for one of the bench's modes."""
    return ("hybrid", True) if mode == RERANK else (mode, False)


def _in_process(store_dir: Path, needles, mode: str) -> tuple[list[float], list[float], float]:
    """Wall and CPU ms of each question (after one warm-up question that
    opens the indexes, as a long-lived process has), and recall@10."""
    from stores.recall import Recaller, RecallQuery
    from stores.store import Store
    mode, rerank = _recall_mode(mode)
    rc = Recaller(Store(store_dir))
    rc.prepare(mode)
    rc._log = lambda *a, **k: None            # measure recall, not the retrieval log
    rc.recall(RecallQuery(query=needles[0].query, k=10, mode=mode, rerank=rerank))
    times, cpu, found = [], [], 0
    for n in needles:
        t, c = time.perf_counter(), time.process_time()
        hits = rc.recall(RecallQuery(query=n.query, k=10, mode=mode, rerank=rerank))
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        found += any(n.value in h.text or n.value in h.snippet for h in hits)
    return times, cpu, found / len(needles)


def _recall_argv(store_dir: Path, query: str, mode: str) -> list[str]:
    mode, rerank = _recall_mode(mode)
    return [sys.executable, "-m", "trace_cli", "--store", str(store_dir), "recall", query, "--mode", mode,
            "-k", "10", "--json", *(["--rerank"] if rerank else [])]


def _cold(store_dir: Path, query: str, mode: str, runs: int = 5) -> dict:
    """Median wall and CPU ms of `runs` fresh `trace recall` processes."""
    from trace_cli.bench.process import repeated
    argv = _recall_argv(store_dir, query, mode)
    repeated(argv, 1, env=installed_env())       # a first run writes the bytecode (and the tokenizer caches)
    return repeated(argv, runs, env=installed_env())


def _served(store_dir: Path, query: str, mode: str, runs: int, env: dict) -> dict:
    """Median wall and CPU ms (the client's plus its worker's) of `runs`
    `trace recall` processes a `trace serve` runs."""
    from trace_cli.bench.process import repeated
    return repeated(_recall_argv(store_dir, query, mode), runs, ok=(0, 3), env=env)


def _scan(store_dir: Path, needles, cmd: list[str]) -> tuple[float, float]:
    """A line scanner (`grep -F -c`, `rg -F -c`) over the raw segments:
    median milliseconds per needle and the fraction found."""
    segs = sorted(str(p) for p in (store_dir / "segments").glob("*.jsonl"))
    times, found = [], 0
    for n in needles:
        t = time.perf_counter()
        out = subprocess.run([*cmd, n.value, *segs], capture_output=True, text=True).stdout
        times.append((time.perf_counter() - t) * 1000)
        found += any(line.rsplit(":", 1)[-1].strip() not in ("", "0") for line in out.splitlines())
    return statistics.median(times), found / len(needles)


def _scanners(store_dir: Path, needles, exact_ms: float) -> dict:
    """grep -F always; ripgrep when it is installed, else the reason it was
    skipped. Each with its recall and TRACE's exact lookup's speed-up."""
    row: dict = {}
    rg = shutil.which("rg")
    for name, cmd in (("grep", ["grep", "-F", "-c"]), ("rg", [rg, "-F", "-c"] if rg else None)):
        if cmd is None:
            row[f"{name}_skipped"] = "ripgrep (rg) is not installed on this machine"
            continue
        ms, recall = _scan(store_dir, needles, cmd)
        row.update({f"{name}_p50_ms": round(ms, 1), f"{name}_recall": round(recall, 3),
                    f"exact_speedup_vs_{name}": round(ms / max(exact_ms, 1e-6), 1)})
    return row


def _exact_trace(store_dir: Path, needles) -> tuple[float, float]:
    from stores.recall import Recaller, RecallQuery
    from stores.store import Store
    rc = Recaller(Store(store_dir))
    rc.prepare("fulltext")
    rc._log = lambda *a, **k: None
    times, found = [], 0
    for n in needles:
        t = time.perf_counter()
        hits = rc.recall(RecallQuery(query=n.value, k=10, mode="fulltext"))
        times.append((time.perf_counter() - t) * 1000)
        found += any(n.value in h.text for h in hits)
    return statistics.median(times), found / len(needles)


def _fts5(store_dir: Path, root: Path, needles) -> tuple[float, float, float]:
    """SQLite FTS5 over the same event texts; an OR of the question's words
    ordered by rank (what a text query to FTS5 looks like)."""
    from reducers.terms import query_words
    from stores.log.segments import iter_events
    (root / "fts5.db").unlink(missing_ok=True)           # built afresh each run, even on a reused store
    db = sqlite3.connect(root / "fts5.db")
    db.execute("CREATE VIRTUAL TABLE ev USING fts5(text, seq UNINDEXED)")
    t = time.perf_counter()
    batch = []
    for e in iter_events(store_dir / "segments"):
        batch.append((e["text"], e["seq"]))
        if len(batch) >= 1000:
            db.executemany("INSERT INTO ev(text, seq) VALUES (?, ?)", batch)
            batch = []
    db.executemany("INSERT INTO ev(text, seq) VALUES (?, ?)", batch)
    db.commit()
    build = time.perf_counter() - t
    times, found = [], 0
    for n in needles:
        match = " OR ".join(f'"{w}"' for w in query_words(n.query))
        t = time.perf_counter()
        rows = db.execute("SELECT text FROM ev WHERE ev MATCH ? ORDER BY rank LIMIT 10", (match,)).fetchall()
        times.append((time.perf_counter() - t) * 1000)
        found += any(n.value in r[0] for r in rows)
    db.close()
    return statistics.median(times), found / len(needles), build


def _raw_tantivy(store_dir: Path, root: Path, needles) -> tuple[float, float, float, dict, float]:
    """Raw Tantivy on the same event texts: one en_stem body field, the
    question's words OR-ed, top 10 by BM25 — the engine under TRACE with
    nothing of TRACE's around it. (p50 ms, recall@10, build s, cold wall/CPU of a new process, CPU p50 ms)."""
    import tantivy

    from reducers.terms import query_words
    from stores.log.segments import iter_events
    path = root / "raw-tantivy"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=True, tokenizer_name="en_stem")
    index = tantivy.Index(sb.build(), path=str(path))
    t = time.perf_counter()
    writer = index.writer(heap_size=256 * 1024 * 1024)
    for e in iter_events(store_dir / "segments"):
        writer.add_document(tantivy.Document(body=e.get("text") or ""))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    build = time.perf_counter() - t
    searcher = index.searcher()
    times, cpu, found = [], [], 0
    for n in needles:
        text = " ".join(query_words(n.query))
        t, c = time.perf_counter(), time.process_time()
        query = index.parse_query(text, ["body"])
        docs = [searcher.doc(addr)["body"][0] for _, addr in searcher.search(query, 10).hits]
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        found += any(n.value in d for d in docs)
    script = ("import sys, tantivy; i = tantivy.Index.open(sys.argv[1]); s = i.searcher(); "
              "[s.doc(a) for _, a in s.search(i.parse_query(sys.argv[2], ['body']), 10).hits]")
    from trace_cli.bench.process import repeated
    cold = repeated([sys.executable, "-c", script, str(path), " ".join(query_words(needles[0].query))], 5,
                    env=installed_env())
    return statistics.median(times), found / len(needles), build, cold, statistics.median(cpu)


def run_recall_bench(sizes: list[int], workdir: str | None, note: Callable[[str], None],
                     cold_runs: int = 5, reuse: bool = False, rerank: bool = False) -> list[dict]:
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-bench-recall-"))
    rows = []
    try:
        for size in sizes:
            root = base / f"n{size}"
            built = _built(root, size, seed=size) if reuse else None
            if built is None:
                note(f"{size} events: building and ingesting (embedding on)")
                store_dir, needles, ingest_rate = _build(root, size, seed=size)
            else:
                note(f"{size} events: reusing the store built in {root}")
                store_dir, needles, ingest_rate = built
            sample = needles[:: max(len(needles) // QUERIES, 1)][:QUERIES]
            row = {"bench": "recall", "events": size, "ingest_events_per_s": round(ingest_rate)}
            reranked = (RERANK,) if rerank else ()
            for mode in ("fulltext", "vector", "hybrid", *reranked):
                note(f"{size} events: {len(sample)} queries in {mode} mode")
                times, cpu, recall10 = _in_process(store_dir, sample, mode)
                row[f"{mode}_p50_ms"] = round(_pct(times, 0.5), 2)
                row[f"{mode}_p95_ms"] = round(_pct(times, 0.95), 2)
                row[f"{mode}_cpu_p50_ms"] = round(_pct(cpu, 0.5), 2)     # the steadier figure on a shared machine
                row[f"{mode}_recall10"] = round(recall10, 3)
            note(f"{size} events: cold CLI starts, then served by a `trace serve` of the bench's own")
            for mode in ("fulltext", "hybrid", *reranked):
                cold = _cold(store_dir, sample[0].query, mode, cold_runs)
                row[f"cold_{mode}_ms"], row[f"cold_{mode}_cpu_ms"] = cold["wall_ms_median"], cold["cpu_ms_median"]
            with resident_server() as served:
                for mode in ("fulltext", "hybrid"):
                    got = _served(store_dir, sample[0].query, mode, cold_runs, served)
                    row[f"served_{mode}_ms"], row[f"served_{mode}_cpu_ms"] = got["wall_ms_median"], got["cpu_ms_median"]
            if rerank:                        # what the reranker adds to a hybrid query, in this run
                row["rerank_added_p50_ms"] = round(row["rerank_p50_ms"] - row["hybrid_p50_ms"], 1)
                row["rerank_added_cpu_p50_ms"] = round(row["rerank_cpu_p50_ms"] - row["hybrid_cpu_p50_ms"], 1)
                row["cold_rerank_added_ms"] = round(row["cold_rerank_ms"] - row["cold_hybrid_ms"], 1)
            note(f"{size} events: exact needle by value vs grep, and SQLite FTS5")
            exact_ms, exact_recall = _exact_trace(store_dir, sample)
            fts_ms, fts_recall, fts_build = _fts5(store_dir, root, sample)
            note(f"{size} events: raw Tantivy on the same events")
            raw_ms, raw_recall, raw_build, raw_cold, raw_cpu = _raw_tantivy(store_dir, root, sample)
            row.update({"tantivy_p50_ms": round(raw_ms, 2), "tantivy_cpu_p50_ms": round(raw_cpu, 2),
                        "tantivy_recall10": round(raw_recall, 3),
                        "tantivy_build_s": round(raw_build, 1), "cold_tantivy_ms": raw_cold["wall_ms_median"],
                        "cold_tantivy_cpu_ms": raw_cold["cpu_ms_median"],
                        "fulltext_vs_tantivy": round(row["fulltext_p50_ms"] / max(raw_ms, 1e-6), 2),
                        "hybrid_vs_tantivy": round(row["hybrid_p50_ms"] / max(raw_ms, 1e-6), 2),
                        "fulltext_cpu_vs_tantivy": round(row["fulltext_cpu_p50_ms"] / max(raw_cpu, 1e-6), 2),
                        "hybrid_cpu_vs_tantivy": round(row["hybrid_cpu_p50_ms"] / max(raw_cpu, 1e-6), 2),
                        "fulltext_vs_fts5": round(row["fulltext_p50_ms"] / max(fts_ms, 1e-6), 3),
                        "hybrid_vs_fts5": round(row["hybrid_p50_ms"] / max(fts_ms, 1e-6), 3)})
            row.update({"exact_p50_ms": round(exact_ms, 2), "exact_recall10": round(exact_recall, 3),
                        **_scanners(store_dir, sample, exact_ms),
                        "fts5_p50_ms": round(fts_ms, 2), "fts5_recall10": round(fts_recall, 3),
                        "fts5_build_s": round(fts_build, 1)})
            rows.append(row)
            note(f"{size} events: done")
        return rows
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)
