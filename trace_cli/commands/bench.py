"""`trace bench …`: benchmarks that print medians and peer ratios."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt

bench_app = typer.Typer(help="Benchmarks: medians and ratios against a peer measured in the same run.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


@bench_app.command("ingest", help=(
    "Log-only append and full ingest of the shared real transcripts replicated to --events, each "
    "against SQLite (one transaction per 1,000 rows) on the same events; peak RSS at 10% and 100% "
    "of the size shows whether memory stays flat."))
def bench_ingest(
    ctx: typer.Context,
    events: Annotated[int, typer.Option("--events", "-n", min=1000, help="Events to reach.")] = 1_000_000,
    repeat: Annotated[int, typer.Option("--repeat", "-r", min=1, help="Runs per phase (median).")] = 1,
    corpus: Annotated[str | None, typer.Option("--corpus", metavar="DIR", help="Transcripts to replicate.")] = None,
    workdir: Annotated[str | None, typer.Option("--workdir", metavar="DIR", help="Keep inputs here (else a temp dir).")] = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app import state
    from trace_cli.bench.ingest_bench import run_ingest_bench

    out = state(ctx).output(json_out)
    rows = run_ingest_bench(events, corpus, workdir, repeat, out.note)
    if out.json:
        out.emit_many(rows)
    else:
        out.table(["size", "phase", "events", "events/s (median)", "seconds", "peak RSS MB", "vs SQLite", "RSS 100%/10%"],
                  ([r["size"], r["phase"], r["events"], r["events_per_s_median"], r["seconds_median"],
                    r["peak_rss_mb_max"], r.get("vs_sqlite", ""), r.get("rss_growth_vs_10pct", "")] for r in rows),
                  title="trace bench ingest")
    return 0
