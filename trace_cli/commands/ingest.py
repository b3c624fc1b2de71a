"""`trace ingest`: transcripts in, one JSON line per input out."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt

FORMATS = "auto|claude-code|codex|openai|anthropic|trace"
SUFFIXES = "*.jsonl, *.json, *.traj, *.ndjson, *.jsonl.zst"


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Add transcripts to the log. PATH is a file, a directory (recursed for *.jsonl, *.json, *.traj, "
        "*.ndjson and Codex's compressed *.jsonl.zst) or - "
        "for stdin; formats are detected unless --format names one. Re-ingesting a file, or one that "
        "has grown, adds only what is new, so cron can run it every few minutes; unchanged files "
        "print nothing (--verbose lists them). Bad lines are reported as file:line: reason and the "
        "rest still ingests (exit 1); the file is then skipped until it changes (--recheck reads it "
        "again). Secrets are redacted before anything is written. Nothing found: exit 3.\n\n"
        "Examples:\n\n"
        "  trace ingest ~/.claude/projects\n\n"
        "  cat session.jsonl | trace ingest - --session my-run\n\n"
        "  trace cron    (prints crontab lines with this install's absolute path)"))
    def ingest(
        ctx: typer.Context,
        paths: Annotated[list[str] | None, typer.Argument(metavar="PATH…", help="Files, directories, or - for stdin.")] = None,
        format: Annotated[str, typer.Option("--format", "-f", metavar=FORMATS, help="Input format.")] = "auto",
        session: Annotated[str | None, typer.Option("--session", "-s", metavar="ID",
                                                    help="Put every event in this session.")] = None,
        strict: Annotated[bool, typer.Option("--strict", help="Write nothing from a file with any bad line.")] = False,
        no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep secrets as they are (not recommended).")] = False,
        no_embed: Annotated[bool, typer.Option(
            "--no-embed", help="Defer vector indexing to `trace index` (cron) or to recall; full text is "
                               "always indexed before ingest returns.")] = False,
        embedder: Annotated[str | None, typer.Option(
            "--embedder", metavar="wordllama|hash",
            help="Embedder for the vector index (a change rebuilds the vectors).")] = None,
        accept_changed_log: Annotated[bool, typer.Option(
            "--accept-changed-log",
            help="Append even though the log was changed outside TRACE since the last write (a segment "
                 "removed, lines cut or altered): the loss is recorded and its seqs never reused. "
                 "`trace verify --repair` does the same after showing what changed.")] = False,
        wait: WaitOpt = 0.0,
        recheck: Annotated[bool, typer.Option(
            "--recheck", help="Parse files again even when unchanged (a file with bad lines is otherwise "
                              "reported once and then skipped until it changes).")] = False,
        verbose: Annotated[bool, typer.Option(
            "--verbose", "-v", help="Also print a line for each unchanged file.")] = False,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import state
        from trace_cli.output import ReaderGone
        from trace_cli.progress import IngestProgress

        st = state(ctx)
        out = st.output(json_out)
        store = st.store(out)
        results = []
        listening = True               # `trace ingest … | head -1`: the work goes on when the reader leaves
        with IngestProgress(out) as progress:
            for result in store.ingest(paths or [], format=format, session=session, strict=strict,
                                       redact=not no_redact, wait=wait, embed=not no_embed, embedder=embedder,
                                       accept_changed_log=accept_changed_log, recheck=recheck,
                                       on_error=out.problem,
                                       on_progress=progress.update):
                progress.done(result)
                results.append(result)
                if (result.unchanged and not verbose) or (st.quiet and not result.errors):
                    continue                               # cron every few minutes: quiet when nothing is new
                if out.json and listening:
                    try:
                        out.emit(result.as_json())
                    except ReaderGone:
                        listening = False
        if not results:
            out.note(f"no transcript files found in {', '.join(paths or [])} (looked for {SUFFIXES})")
            return 3
        shown = [r for r in results if (verbose or not r.unchanged) and (r.errors or not st.quiet)]
        if not out.json and shown:
            out.table(["source", "format", "session", "added", "skipped", "errors"],
                      ([r.source, r.format or "-", _session_label(r), r.added,
                        f"{r.skipped} (unchanged)" if r.unchanged else r.skipped, r.errors] for r in shown),
                      title=f"ingested into {store.dir}")
        unchanged = sum(r.unchanged for r in results)
        if unchanged and not verbose and out.stderr_is_tty():
            out.note(f"{unchanged} file(s) unchanged since they were ingested (--verbose lists them)")
        return 1 if any(r.errors for r in results) else 0


def _session_label(r) -> str:
    if r.sessions > 1:
        return f"{r.session_id} (+{r.sessions - 1} more)"
    return r.session_id or "-"
