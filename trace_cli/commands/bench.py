"""`trace bench …`: benchmarks that print medians and peer ratios."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt

bench_app = typer.Typer(help="Benchmarks: medians and ratios against a peer measured in the same run.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


def _workdir(keeps: str):
    """The --workdir option, saying what this bench keeps there."""
    return Annotated[str | None, typer.Option("--workdir", metavar="DIR", help=f"Keep {keeps} here (else a temp dir).")]


def _repeat(per: str):
    """The --repeat option: how many runs of what make the median."""
    return Annotated[int, typer.Option("--repeat", "-r", min=1, help=f"{per} (median).")]


def _corpus(does: str):
    """The --corpus option: the transcripts this bench reads or replicates."""
    return Annotated[str | None, typer.Option("--corpus", metavar="DIR", help=f"Transcripts to {does}.")]


_SUFFIX = {"k": 1_000, "m": 1_000_000}


def _numbers(option: str, text: str) -> list[int]:
    """Whole numbers separated by commas; 10k and 1M are allowed."""
    try:
        out = []
        for x in (x.strip().lower() for x in text.split(",")):
            if x:
                scale = _SUFFIX.get(x[-1], 1)
                out.append(int(x[:-1] if scale > 1 else x) * scale)
        if out and min(out) > 0:
            return out
    except ValueError:
        pass
    from stores.errors import UsageError
    raise UsageError(f"{option} takes whole numbers above 0 separated by commas (10k and 1M allowed), got {text!r}")


@bench_app.command("ingest", help=(
    "Log-only append and full ingest of the shared real transcripts replicated to --events, each "
    "against SQLite (one transaction per 1,000 rows) on the same events, and SQLite with an FTS5 index "
    "over the same texts, the fair peer (vs SQLite / vs FTS5: the ratio to each peer, which compares runs "
    "on machines of different speed); peak RSS at 10% and 100% of the size "
    "shows whether memory stays flat."))
def bench_ingest(
    ctx: typer.Context,
    events: Annotated[int, typer.Option("--events", "-n", min=1000, help="Events to reach.")] = 1_000_000,
    repeat: _repeat("Runs per phase") = 1,
    corpus: _corpus("replicate") = None,
    workdir: _workdir("inputs") = None,
    embed: Annotated[bool, typer.Option("--embed", help="Include the vector index in full ingest.")] = False,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.ingest_bench import run_ingest_bench

    out = state(ctx).output(json_out)
    rows = run_ingest_bench(events, corpus, workdir, repeat, out.note, embed=embed)
    if out.json:
        out.emit_many(rows)
    else:
        out.table(["size", "phase", "events", "events/s (median)", "seconds", "peak RSS MB", "peak anon MB",
                   "vs SQLite", "vs FTS5", "RSS 100%/10%", "anon 100%/10%"],
                  ([r["size"], r["phase"], r["events"], r["events_per_s_median"], r["seconds_median"],
                    r["peak_rss_mb_max"], r.get("peak_anon_mb_max") or "", r.get("vs_sqlite", ""),
                    r.get("vs_sqlite_fts5", ""),
                    r.get("rss_growth_vs_10pct", ""), r.get("anon_growth_vs_10pct", "")] for r in rows),
                  title="trace bench ingest")
    return 0


@bench_app.command("recall", help=(
    "Recall latency (p50/p95, in process) in fulltext, vector and hybrid mode at each store size, beside "
    "raw Tantivy and SQLite FTS5 on the same events in the same run; the wall time of a cold `trace recall` "
    "(and of a bare Tantivy process), and of one a `trace serve` of the bench's own runs; an exact needle against grep -F and ripgrep (if installed) over the raw segments "
    "and SQLite FTS5 on the same events, each with its recall@10. Ingest-with-embedding speed is measured "
    "while the stores are built."))
def bench_recall(
    ctx: typer.Context,
    sizes: Annotated[str, typer.Option("--sizes", metavar="N,N,…", help="Store sizes in events.")] = "10000,100000,1000000",
    workdir: _workdir("stores") = None,
    reuse: Annotated[bool, typer.Option("--reuse", help="Measure the stores an earlier run finished building in --workdir (same sizes) instead of building them again; the peers are rebuilt.")] = False,
    rerank: Annotated[bool, typer.Option("--rerank", help="Also hybrid recall with --rerank (the optional extra), in process and cold, and what it adds.")] = False,
    json_out: JsonOpt = False,
) -> int:
    from stores.recall.query import require_rerank
    from trace_cli.app_state import state
    from trace_cli.bench.recall_bench import run_recall_bench

    if reuse and not workdir:
        from stores.errors import UsageError
        raise UsageError("--reuse needs --workdir DIR (where the earlier run kept its stores)")
    out = state(ctx).output(json_out)
    require_rerank(rerank)
    rows = run_recall_bench(_numbers("--sizes", sizes), workdir, out.note, reuse=reuse, rerank=rerank)
    if out.json:
        out.emit_many(rows)
    else:
        cols = ["events", "ingest_events_per_s", "fulltext_p50_ms", "hybrid_p50_ms", "fulltext_cpu_p50_ms",
                "hybrid_cpu_p50_ms", "tantivy_p50_ms", "tantivy_cpu_p50_ms",
                "fts5_p50_ms", "fulltext_vs_tantivy", "hybrid_vs_tantivy", "fulltext_recall10", "hybrid_recall10",
                "tantivy_recall10", "fts5_recall10", "cold_fulltext_ms", "cold_hybrid_ms", "cold_tantivy_ms",
                "cold_fulltext_cpu_ms", "cold_hybrid_cpu_ms", "cold_tantivy_cpu_ms", "served_fulltext_ms",
                "served_hybrid_ms", "served_fulltext_cpu_ms", "served_hybrid_cpu_ms",
                *(["rerank_p50_ms", "rerank_cpu_p50_ms", "rerank_recall10", "rerank_added_p50_ms",
                   "cold_rerank_ms", "cold_rerank_added_ms"] if rerank else []), "exact_p50_ms", "grep_p50_ms", "exact_speedup_vs_grep", "rg_p50_ms", "exact_speedup_vs_rg"]
        out.table(cols, ([r.get(c, "") for c in cols] for r in rows), title="trace bench recall")
    return 0


@bench_app.command("redact", help=(
    "The redactor on every string of the shared real transcripts (texts) and on every record whole "
    "(records: the structured path meta, tool inputs and ids take), in CPU seconds, against a peer in "
    "the same process: each text encoded and lowercased, the one pass any scan needs (vs peer: the ratio)."))
def bench_redact(
    ctx: typer.Context,
    repeat: _repeat("Runs per phase") = 5,
    corpus: _corpus("read") = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.redact_bench import run_redact_bench

    out = state(ctx).output(json_out)
    rows = run_redact_bench(corpus, repeat, out.note)
    if out.json:
        out.emit_many(rows)
    else:
        cols = ["phase", "items", "chars_m", "cpu_s_median", "us_per_item", "mb_per_s", "vs_peer", "found"]
        out.table(cols, ([r[c] for c in cols] for r in rows), title="trace bench redact")
    return 0


@bench_app.command("needle", help=(
    "The paper's 10.4 protocol on generated data: 50 needles in 200 events streamed in 5 parts with a "
    "compaction after each (budget 4000, headroom 200, 3-turn hot tail), pointer vs truncate vs narrative "
    "in one run; then the eviction loop's latency at 100 … 100k events, and the tokens re-read per turn "
    "for what was evicted (markers vs summaries)."))
def bench_needle(
    ctx: typer.Context,
    workdir: _workdir("the stores") = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.needle_bench import run_needle_bench

    out = state(ctx).output(json_out)
    rows = run_needle_bench(out.note, workdir)
    if out.json:
        out.emit_many(rows)
        return 0
    proto = [r for r in rows if r["bench"] == "needle"]
    cols = ["strategy", "recall_at_10", "needle_loss", "cycles", "events_in_cache", "markers_in_cache",
            "within_budget_every_cycle", "eviction_ms_median", "reread_tokens_per_cycle"]
    out.table(cols, ([r[c] for c in cols] for r in proto), title="trace bench needle (200 events, 50 needles)")
    scale = [r for r in rows if r["bench"] == "needle-scaling"]
    cols = ["events", "eviction_ms_median", "ms_per_1k_events", "vs_linear_from_200"]
    out.table(cols, ([r[c] for c in cols] for r in scale), title="eviction latency scaling")
    return 0


@bench_app.command("locomo", help=(
    "LoCoMo retrieval as memory systems publish it: every conversation of LOCOMO_JSON in one store, "
    "turn R@K and turn recall_all@K (the shared scorer's measure), session recall_any@K / recall_all@K "
    "(sessions ranked by their best hit), per category; then how a --min-score 0.5 gate does on the "
    "questions plus the adversarial (no-answer) ones."))
def bench_locomo(
    ctx: typer.Context,
    locomo_json: Annotated[str, typer.Argument(metavar="LOCOMO_JSON", help="LoCoMo conversations (the dataset's JSON).")],
    k: Annotated[int, typer.Option("-k", min=1, help="Cut-off K.")] = 10,
    mode: Annotated[str, typer.Option("--mode", metavar="hybrid|fulltext|vector")] = "hybrid",
    hops: Annotated[int, typer.Option("--hops", metavar="1|2")] = 1,
    dated: Annotated[bool, typer.Option("--dated/--undated", help=(
        "Give each turn its session's date, as a store of real conversations has (default; recall uses the "
        "dates a question names); --undated ingests as the shared converter does, with no dates."))] = True,
    rerank: Annotated[bool, typer.Option("--rerank", help="Recall with --rerank (the optional extra): the best 50 reordered by the stronger model.")] = False,
    misses: Annotated[str | None, typer.Option("--misses", metavar="FILE", help=(
        "Write each evidence turn outside its question's top K as a JSON line: its rank among the hits "
        "returned and in the whole candidate pool (null: no candidate generator reached it); the counts "
        "per category print as a table."))] = None,
    workdir: _workdir("the store") = None,
    json_out: JsonOpt = False,
) -> int:
    from stores.recall.query import require_rerank
    from trace_cli.app_state import state
    from trace_cli.bench.locomo import run_locomo_bench

    out = state(ctx).output(json_out)
    require_rerank(rerank)
    rows = run_locomo_bench(locomo_json, workdir, k, mode, hops, dated, out.note, rerank=rerank, misses_out=misses)
    if out.json:
        out.emit_many(rows)
        return 0
    cols = ["category", "questions", "turn_R", "turn_all", "session_any", "session_all", "session_any_topk_turns"]
    out.table(cols, ([r[c] for c in cols] for r in rows if r["bench"] == "locomo"),
              title=f"trace bench locomo (K={k}, {mode}, hops {hops}{', rerank' if rerank else ''})")
    if misses:
        cols = ["category", "evidence", "in_top_k", "ranked_below_k", "in_pool_below_hits", "not_in_pool"]
        out.table(cols, ([r[c] for c in cols] for r in rows if r["bench"] == "locomo-misses"),
                  title=f"where the evidence turns outside the top {k} are (details: {misses})")
    gate_row = rows[-1]
    cols = ["threshold", "precision", "recall", "recall_of_found", "no_answer_dropped", "answerable", "no_answer"]
    out.table(cols, [[gate_row[c] for c in cols]], title="--min-score gate")
    return 0


@bench_app.command("fit", help=(
    "Fit recall's scoring weights on dev data (LoCoMo dev questions and no-answer queries, generated "
    "needles and absent-subject queries): the ranking by R@10 (checked leaving each conversation out), "
    "then the calibration of score = P(an answer among the first ten hits) and p_hit, and the --min-score 0.5 "
    "gate, also with each conversation left out of the fit. Prints the weights for reducers/fusion.py and "
    "reducers/calibration.py."))
def bench_fit(
    ctx: typer.Context,
    locomo_json: Annotated[str, typer.Argument(metavar="LOCOMO_JSON", help="LoCoMo dev conversations.")],
    workdir: _workdir("stores and pools") = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.rank_fit import run_fit

    out = state(ctx).output(json_out)
    out.emit(run_fit(locomo_json, workdir, out.note))
    return 0


@bench_app.command("context", help=(
    "What `trace context` costs against the session's length (1k, 10k, 100k, 250k events by default), "
    "uncompacted and compacted: medians in process; CLI calls as a runtime makes them before each model "
    "call (the first cold one, the median of 3 more, and of 3 a `trace serve` of the bench's own runs); "
    "and the peer — reading the whole session — in the same run; the compaction in between is timed; growth against size says whether "
    "the cost is linear or better. A session is also measured alone in its own store (vs_alone ~1: the "
    "cost does not follow the store)."))
def bench_context(
    ctx: typer.Context,
    sizes: Annotated[str, typer.Option("--sizes", metavar="N,N,…", help="Session sizes in events.")] = "1000,10000,100000,250000",
    repeat: _repeat("Renders per measurement") = 7,
    workdir: _workdir("the stores") = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.context_bench import run_context_bench

    out = state(ctx).output(json_out)
    rows = run_context_bench(_numbers("--sizes", sizes), out.note, workdir, repeat)
    if out.json:
        out.emit_many(rows)
        return 0
    cols = ["events", "state", "median_ms", "p95_ms", "cpu_ms", "cold_first_ms", "cold_cli_ms", "cold_cli_cpu_ms",
            "served_cli_ms", "served_cli_cpu_ms", "growth",
            "cpu_growth", "size_ratio", "full_read_ms", "vs_full_read", "read_events", "pack_tokens", "vs_alone",
            "cpu_vs_alone"]
    out.table(cols, ([r.get(c, "") for c in cols] for r in rows if r["bench"] == "context"),
              title="trace bench context (budget 8000)")
    cols = ["events", "ms", "evicted", "fits"]
    out.table(cols, ([r[c] for c in cols] for r in rows if r["bench"] == "compact"), title="compaction between")
    return 0


@bench_app.command("sweep", help=(
    "The nightly sweep over the shared real transcripts replicated to --events (ingested first), at 10% "
    "and 100% of that size: events/s (median of --repeat runs), the rate of a plain scan of the same log "
    "as the peer (vs_scan), peak memory at both sizes (flat memory: anon 100%/10% near 1), and the rate "
    "on one copy of never-seen text."))
def bench_sweep(
    ctx: typer.Context,
    events: Annotated[int, typer.Option("--events", "-n", min=1000, help="Events to reach.")] = 100_000,
    repeat: _repeat("Runs per size") = 1,
    corpus: _corpus("replicate") = None,
    workdir: _workdir("inputs") = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.sweep_bench import run_sweep_bench

    out = state(ctx).output(json_out)
    rows = run_sweep_bench(events, corpus, workdir, repeat, out.note)
    if out.json:
        out.emit_many(rows)
    else:
        cols = ["size", "events", "events_per_s_median", "seconds_median", "scan_events_per_s", "vs_scan",
                "peak_rss_mb_max", "peak_anon_mb_max", "anon_growth_vs_10pct", "facts_live", "episodes"]
        out.table(cols, ([r.get(c, "") for c in cols] for r in rows), title="trace bench sweep")
    return 0


@bench_app.command("hooks", help=(
    "The Stop hook an agent waits on: a store of --events events from Claude Code sessions is built (the followed "
    "session of each --session-events size), then --runs times a turn is appended and `trace hooks run --agent claude-code Stop` runs as a new process with the payload "
    "on stdin (p50/p95/max wall time), against the peer every hook pays, a cold `trace --help`, timed the same "
    "way in the same run. Checks that every appended event landed."))
def bench_hooks(
    ctx: typer.Context,
    events: Annotated[int, typer.Option("--events", "-n", min=4, help="Events in the store before the runs.")] = 10_000,
    session_events: Annotated[str, typer.Option(
        "--session-events", metavar="N,N,…", help="Sizes of the session the hook follows (one row each).")] = "500,10000",
    runs: Annotated[int, typer.Option("--runs", min=1, help="Hook runs timed.")] = 100,
    workdir: _workdir("the hooks' store and session") = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state
    from trace_cli.bench.hooks_bench import run_hooks_bench

    out = state(ctx).output(json_out)
    rows = run_hooks_bench(events, _numbers("--session-events", session_events), runs, workdir, out.note)
    if out.json:
        out.emit_many(rows)
    else:
        cols = list(rows[0])
        out.table(cols, ([r[c] for c in cols] for r in rows), title="trace bench hooks")
    return 0


@bench_app.command("all", help=(
    "Every benchmark in one run, each section in its own process: cold start (vs the bare interpreter), ingest "
    "(vs SQLite inserts and SQLite with an FTS5 index), recall at --sizes (vs grep -F, ripgrep if installed, "
    "SQLite FTS5), the needle protocol (pointer vs truncate vs narrative), LoCoMo dev (vs FTS5; skipped with "
    "the reason when ../shared lacks it), context assembly, the sweep, redaction and the Stop hook. Medians of --repeat "
    "runs, ratios against the peer in the same run, peak RSS per section. JSON to --json-out (or stdout when "
    "piped), Markdown to --md-out (or stdout on a terminal); progress on stderr. --quick: tiny sizes, a smoke "
    "test in a minute or two."))
def bench_all(
    ctx: typer.Context,
    quick: Annotated[bool, typer.Option("--quick", help="Tiny sizes, one run each: a smoke test.")] = False,
    sizes: Annotated[str | None, typer.Option(
        "--sizes", metavar="N,N,…", help="Recall store sizes (the largest is also the ingest size). "
        "Default 10k,100k,1M; with --quick 500.")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", "-r", min=1, help="Runs per measured phase (median). "
                                               "Default 3; with --quick 1.")] = None,
    only: Annotated[str | None, typer.Option(
        "--only", metavar="NAME,…", help="Only these sections: cold_start, needle, locomo, context, sweep, "
        "redact, hooks, recall, ingest.")] = None,
    shared: Annotated[str | None, typer.Option(
        "--shared", metavar="DIR", help="The shared data (transcripts/, data/locomo-dev/, tools/). "
        "Default $TRACE_SHARED or ../shared.")] = None,
    workdir: Annotated[str | None, typer.Option("--workdir", metavar="DIR", help="Keep inputs and stores here "
                                                "(else a temp dir, removed at the end).")] = None,
    json_out: Annotated[str | None, typer.Option("--json-out", metavar="FILE", help="Write the JSON report here.")] = None,
    md_out: Annotated[str | None, typer.Option("--md-out", metavar="FILE", help="Write the Markdown report here.")] = None,
    json_mode: JsonOpt = False,
) -> int:
    from pathlib import Path

    import orjson

    from stores.errors import TraceError, UsageError
    from trace_cli.app_state import state
    from trace_cli.bench.all_bench import run_all
    from trace_cli.bench.markdown import render
    from trace_cli.bench.suite import SECTIONS, Plan, default_shared

    out = state(ctx).output(json_mode)
    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    unknown = sorted(set(names or []) - set(SECTIONS))
    if unknown:
        raise UsageError(f"--only: unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    root = Path(shared) if shared else default_shared()
    if quick:
        plan = Plan.smoke(root, _numbers("--sizes", sizes) if sizes else None, workdir)
        plan.repeat = repeat or 1
    else:
        plan = Plan.full(_numbers("--sizes", sizes or "10k,100k,1M"), repeat or 3, root, workdir)
    command = ["trace", "bench", "all", *(["--quick"] if quick else []), *(["--sizes", sizes] if sizes else []),
               *(["--repeat", str(repeat)] if repeat else []), *(["--only", only] if only else []),
               *(["--shared", shared] if shared else []), *(["--workdir", workdir] if workdir else []),
               *(["--json-out", json_out] if json_out else []), *(["--md-out", md_out] if md_out else [])]
    import shlex

    def write(report: dict) -> None:           # after every section, so a stopped run keeps what it measured
        if json_out:
            Path(json_out).write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2, default=str) + b"\n")
        if md_out:
            Path(md_out).write_text(render(report))
    report = run_all(plan, out.note, names, command=" ".join(shlex.quote(a) for a in command), partial=write)
    write(report)
    text = render(report)
    if out.json and not json_out:
        out.emit(report)
    elif not out.json:
        out.raw(text)
    failed = [s["name"] for s in report["sections"] if s["status"] == "error"]
    if failed:
        raise TraceError(f"bench section(s) failed: {', '.join(failed)} (the reason is in the report; "
                         "rerun one with --only NAME)")
    return 0

