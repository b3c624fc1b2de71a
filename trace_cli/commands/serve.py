"""`trace serve`: the resident server a runtime or hook can keep running
so each `trace` it starts skips the start-up (trace_cli/resident)."""
from __future__ import annotations

import os
from typing import Annotated

import typer

from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Keep one warm TRACE process for this user and installation: every `trace` command started while "
        "it runs (stdin not a terminal, TRACE_SERVE not 0) hands its argv, directory, environment and "
        "streams to it and runs in a fresh fork of it, with TRACE's modules and tokenizer already loaded: "
        "a cold `trace context` or `trace recall` then costs ~0.1 s instead of ~0.4 s. Output, exit codes "
        "and signals are those of the command; nothing about stores changes. The server quits after --idle "
        "seconds without a command, on --stop or SIGTERM, and when TRACE's code changes on disk (the "
        "command then runs in its own process). Socket: $XDG_RUNTIME_DIR/trace/, else /tmp/trace-UID/.\n\n"
        "Example:  trace serve --detach --idle 3600"))
    def serve(
        ctx: typer.Context,
        idle: Annotated[float, typer.Option("--idle", min=1, metavar="SECONDS",
                                            help="Quit after this long without a command.")] = 1800,
        detach: Annotated[bool, typer.Option("--detach", "-d", help=(
            "Start in the background and return once it listens, printing its status; when one is already "
            "running, print its status (exit 0 either way: safe in a hook or a login script).")) ] = False,
        status: Annotated[bool, typer.Option("--status", help="Print the running server's status (exit 3: none).")] = False,
        stop: Annotated[bool, typer.Option("--stop", help="Stop the running server (exit 3: none was running).")] = False,
        json_out: JsonOpt = False,
    ) -> int:
        from stores.errors import TraceError, UsageError
        from trace_cli.app_state import state
        from trace_cli.resident import frames
        from trace_cli.resident.client import control
        from trace_cli.resident.server import ServeError
        out = state(ctx).output(json_out)
        if sum((detach, status, stop)) > 1:
            raise UsageError("give one of --detach, --status, --stop")
        if status or stop:
            info = control(frames.STOP if stop else frames.STATUS)
            if info is None:
                out.note("no TRACE server is running for this installation")
                return 3
            out.emit({"running": not stop, "stopped": stop, **info})
            return 0
        try:
            if detach:
                running = control(frames.STATUS)             # idempotent: a hook or login script may ask twice
                out.emit({"running": True, "started_now": running is None, **(running or _detached(idle))})
                return 0
            from trace_cli.resident.server import serve as run
            done = run(idle, on_ready=lambda s: out.note(f"listening at {s.path} (pid {s.pid})"))
        except ServeError as exc:
            raise TraceError(str(exc)) from None
        out.note(f"stopped: {done.stopped_because} after {done.commands} commands")
        return 0


def _detached(idle: float) -> dict:
    """Fork a server that outlives this process (its own session, stdio
    on /dev/null) and wait until it listens: its status, or its error."""
    import marshal

    from stores.errors import TraceError
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.close(read_end)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        _daemon(write_end, idle)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        reply = pipe.read()
    try:
        kind, value = marshal.loads(reply)
    except (EOFError, ValueError, TypeError):
        raise TraceError("the server did not start (run `trace serve` in the foreground to see why)") from None
    if kind == "error":
        raise TraceError(value)
    return value


def _daemon(write_end: int, idle: float) -> None:
    import marshal

    from trace_cli.resident.server import ServeError, serve
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.chdir("/")

    def ready(served):
        os.write(write_end, marshal.dumps(("ok", served.status())))
        os.close(write_end)

    code = 0
    try:
        serve(idle, on_ready=ready)
    except ServeError as exc:
        os.write(write_end, marshal.dumps(("error", str(exc))))
        code = 1
    except BaseException:
        code = 1
    os._exit(code)
