"""`trace cron`: crontab lines that work as printed. Cron runs with a bare
PATH and none of the user's environment, so the lines name this install's
`trace` by absolute path and the store by absolute path."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

# Where agents keep their sessions, as cron's shell will expand them.
AGENT_DIRS = ("~/.claude/projects", "~/.codex/sessions")
LOG_DIR = "~/.local/state/trace"


def trace_executable() -> str:
    """The `trace` of this install: beside the running interpreter (a venv's
    bin/), else the script this process was started as."""
    beside = Path(sys.executable).parent / "trace"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside.absolute())
    return str(Path(sys.argv[0]).resolve())


def crontab_lines(trace_bin: str, store: Path, paths: list[str], every: int, nightly: str | None,
                  with_sweep: bool) -> list[str]:
    """The ingest line every `every` minutes and, with `with_sweep`, the
    nightly sweep + digest at `nightly` (HH:MM)."""
    run = f"{shlex.quote(trace_bin)} --store {shlex.quote(str(store))}"
    log = f">> {LOG_DIR}/cron.log 2>&1"
    watched = " ".join(paths)
    lines = [f"*/{every} * * * *  mkdir -p {LOG_DIR} && {run} ingest --wait 60 -q {watched} {log}"]
    if with_sweep and nightly:
        hour, minute = nightly.split(":")
        lines.append(f"{int(minute)} {int(hour)} * * *  mkdir -p {LOG_DIR} && {run} sweep --wait 600 -q {log} "
                     f"&& {run} digest --out {LOG_DIR}/digest.md -q {log}")
    # cron ends a command at a bare % (the rest becomes its stdin): a path
    # holding one must say \% (which cron hands the shell as %)
    return [line.replace("%", "\\%") for line in lines]


def ingest_problem(path: Path) -> str | None:
    """Why `trace ingest` run by cron (as this user) could not read `path`,
    and the fix."""
    if not os.path.exists(path):
        return "does not exist, so the ingest line would fail (exit 1) on every run: check the path (or create it " \
               "before cron's first run)"
    if not os.access(path, os.R_OK) or (path.is_dir() and not os.access(path, os.X_OK)):
        return (f"cannot be read by you, so the ingest line would fail (exit 1) on every run: give yourself read "
                f"access (`chmod -R u+rX {shlex.quote(str(path))}`) or name another path")
    return None


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Print crontab lines for this install: ingest every few minutes and, where `trace sweep` exists, "
        "the nightly sweep and digest. They name this `trace` and the store by absolute path, because "
        "cron has neither your PATH nor TRACE_HOME. Paste them into `crontab -e`. A PATH that does not exist or "
        "cannot be read, or a store you cannot write, is named on stderr: that line would fail on every run.\n\n"
        "Example:  trace cron ~/.claude/projects ~/work/agent-logs"))
    def cron(
        ctx: typer.Context,
        paths: Annotated[list[str] | None, typer.Argument(
            metavar="PATH…", help="What to ingest (default: the Claude Code and Codex session folders you have).")] = None,
        every: Annotated[int, typer.Option("--every", min=1, max=59, metavar="MINUTES",
                                           help="Ingest this often.")] = 5,
        nightly: Annotated[str, typer.Option("--nightly", metavar="HH:MM",
                                             help="When the sweep and digest run (local time).")] = "03:17",
    ) -> int:
        from stores.integrity.access import unwritable
        from stores.errors import UsageError
        from trace_cli.app_state import opened

        try:
            hour, minute = (int(x) for x in nightly.split(":"))
            if not (0 <= hour < 24 and 0 <= minute < 60):
                raise ValueError
        except ValueError:
            raise UsageError(f"--nightly {nightly!r} is not a time of day; use HH:MM, e.g. 03:17") from None
        out, store = opened(ctx, True)
        if not paths:
            home = Path.home()
            paths = [p for p in AGENT_DIRS if (home / p[2:]).is_dir()]
            if not paths:
                paths = list(AGENT_DIRS)
                out.warn(f"none of {', '.join(AGENT_DIRS)} exists yet: the ingest line fails (exit 1) on every "
                         f"run until one does; name the folders your agents write to (trace cron PATH…)")
        else:
            absolute = [Path(p).expanduser().absolute() for p in paths]
            for path in absolute:
                if "\n" in str(path):
                    raise UsageError(f"{str(path)!r} holds a line break, which ends a crontab line; rename it "
                                     f"or name a folder above it")
                why = ingest_problem(path)
                if why:
                    out.warn(f"{path} {why}")
            paths = [shlex.quote(str(p)) for p in absolute]
        why = unwritable(store.dir.absolute())
        if why:
            out.warn(f"{why}: every cron run will fail (exit 1); give yourself write access or run `trace cron` "
                     f"again with a --store you can write")
        commands = ctx.find_root().command.commands
        for line in crontab_lines(trace_executable(), store.dir.absolute(), paths, every, nightly,
                                  with_sweep="sweep" in commands and "digest" in commands):
            out.raw(line + "\n")
        return 0
