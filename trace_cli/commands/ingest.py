"""`trace ingest`: transcripts in, one JSON line per input out."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt

FORMATS = "auto|claude-code|codex|gemini-cli|opencode|openai|anthropic|trace"
SUFFIXES = "*.jsonl, *.json, *.traj, *.ndjson, *.jsonl.zst"


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Add transcripts to the log. PATH is a file, a directory (recursed for *.jsonl, *.json, *.traj, "
        "*.ndjson and Codex's compressed *.jsonl.zst; symlinked folders are descended, each real folder once, "
        "so a link back up the tree is no loop) or - "
        "for stdin; formats are detected unless --format names one. Re-ingesting a file, or one that "
        "has grown, adds only what is new, so cron can run it every few minutes; unchanged files "
        "print nothing (--verbose lists them). Bad lines are reported as file:line: reason and the "
        "rest still ingests (exit 1); the file is then skipped until it changes (--recheck reads it "
        "again). Secrets are redacted before anything is written. Nothing found (no transcript files, "
        "or only empty input: a zero-byte file, blank lines, an empty pipe): exit 3.\n\n"
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
        no_state: Annotated[bool, typer.Option(
            "--no-state", help="Do not keep sessions' working state (no task_state events).")] = False,
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
        follow: Annotated[bool, typer.Option(
            "--follow", help="Keep running: poll PATH… and ingest what they gain as lines complete (survives "
                             "rotation and truncation; a folder's new files and symlinked folders too); SIGINT/SIGTERM/SIGHUP stops "
                             "after a last pass, all of it on disk.")] = False,
        poll: Annotated[float, typer.Option("--poll", metavar="SECONDS", min=0.05, help="With --follow: how often to look.")] = 0.5,
        settle: Annotated[float, typer.Option(
            "--settle", metavar="SECONDS", min=0, help="With --follow: ingest a file once it has been still this long "
                                                       "(a busy one at least every 10 s).")] = 1.0,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import state
        from trace_cli.output import ReaderGone
        from trace_cli.progress import IngestProgress

        st = state(ctx)
        out = st.output(json_out)
        store = st.store(out)
        options = dict(format=format, session=session, strict=strict, redact=not no_redact, embed=not no_embed,
                       embedder=embedder, working_state=not no_state, accept_changed_log=accept_changed_log,
                       on_error=out.problem)
        if follow:
            return _follow(store, paths or [], options, out, wait=wait, poll=poll, settle=settle)
        results = []
        listening = True               # `trace ingest … | head -1`: the work goes on when the reader leaves
        with IngestProgress(out) as progress:
            for result in store.ingest(paths or [], wait=wait, recheck=recheck, on_progress=progress.update,
                                       **options):
                progress.done(result)
                results.append(result)
                if result.empty and not result.unchanged:
                    out.problem(f"{result.source}: empty (no JSON records found); nothing to ingest")
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
        if any(r.errors for r in results):
            return 1
        if all(r.empty for r in results):                        # nothing found in any input
            quiet = sum(r.unchanged for r in results)           # empty files a directory held: not said yet
            if quiet:
                out.note(f"nothing to ingest: the {quiet} transcript file(s) found are empty")
            return 3
        return 0


def _follow(store, paths: list[str], options: dict, out, *, wait: float, poll: float, settle: float) -> int:
    """Follow until SIGINT/SIGTERM: one JSON line per pass that added or
    failed something (a table row on a terminal), then exit 0 (1 if any
    source had errors)."""
    import signal

    from stores.errors import UsageError
    from stores.follow.tailer import Follower

    if not paths or "-" in paths:
        raise UsageError("--follow needs files or directories to watch (not stdin)")
    follower = Follower(store, paths, poll=poll, settle=settle, note=out.note,
                        ingest_options={**options, "wait": max(wait, 5.0)})
    # A closed terminal (SIGHUP) stops it as Ctrl-C does, unless it runs under nohup (the hangup ignored).
    stopping = [signal.SIGINT, signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        stopping.append(signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda *_: follower.stop()) for sig in stopping}
    out.note(f"following {len(paths)} path(s) into {store.dir}; Ctrl-C stops")
    from pathlib import Path
    for missing in (p for p in paths if not Path(p).expanduser().exists()):   # a typo would wait in silence
        out.note(f"{missing} is not there (yet): followed once it appears")
    errors = False
    try:
        for result in follower.run():
            errors = errors or bool(result.errors)
            if result.added or result.errors:
                if out.json:
                    out.emit(result.as_json())
                else:
                    out.console.print(f"{result.source}: +{result.added} events"
                                      + (f", {result.errors} error(s)" if result.errors else ""), markup=False)
                import sys
                sys.stdout.flush()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    out.note("stopped; every event read is on disk")
    return 1 if errors else 0


def _session_label(r) -> str:
    if r.sessions > 1:
        return f"{r.session_id} (+{r.sessions - 1} more)"
    return r.session_id or "-"
