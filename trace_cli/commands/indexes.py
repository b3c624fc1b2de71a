"""`trace index` and `trace reindex`: the derived indexes, on demand."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt

EmbedderOpt = Annotated[str | None, typer.Option(
    "--embedder", metavar="wordllama|hash",
    help="Embedder for the vector index (recorded with it; a change rebuilds the vectors).")]


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Bring the full-text and vector indexes up to the log: the cron job that pairs with "
        "`ingest --no-embed` (in crontab, name trace by the absolute path `trace cron` prints: */10 * * * * /path/to/.venv/bin/trace index --wait 300 -q)."))
    def index(ctx: typer.Context, embedder: EmbedderOpt = None, wait: WaitOpt = 0.0, json_out: JsonOpt = False) -> int:
        return _run(ctx, "index", embedder, wait, json_out)

    @app.command(help="Rebuild the full-text and vector indexes from the log (they are derived: nothing is lost).")
    def reindex(ctx: typer.Context, embedder: EmbedderOpt = None, wait: WaitOpt = 0.0, json_out: JsonOpt = False) -> int:
        return _run(ctx, "reindex", embedder, wait, json_out)


def _run(ctx, what: str, embedder, wait, json_out) -> int:
    from trace_cli.app_state import opened
    out, store = opened(ctx, json_out, must_exist=True)
    done = store.index(wait=wait, embedder=embedder) if what == "index" else store.reindex(wait=wait, embedder=embedder)
    result = done.to_dict()
    if out.json:
        out.emit(result)
    else:
        a = result["after"]
        out.console.print(f"{what}: log at seq {a['log_seq']}; full text at {a['fulltext_seq']}; "
                          f"{a['vectors']} vectors ({a['embedder']}, {a['dim']}-d) at {a['vector_seq']} "
                          f"in {result['seconds']} s")
    return 0
