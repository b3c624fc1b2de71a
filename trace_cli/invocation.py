"""One run of `trace`, before and after the command: the process set up,
and an exception turned into one line on stderr and an exit code
(DESIGN.md). Shared by the full CLI (trace_cli/app.py) and the quick path
of `trace recall` (trace_cli/quick_recall.py), so both start and fail
alike. Kept free of Typer: the quick path exists to not import it."""
from __future__ import annotations

import os
import sys
from typing import Callable

from stores.errors import StoreLocked, TraceError
from trace_cli.output import ReaderGone, say, to_devnull


def started() -> int | None:
    """Set up the process; an exit code when it cannot run a command."""
    os.umask(0o077)                       # transcripts are private: 0600 files, 0700 dirs
    if sys.stderr is None:                # started with stderr closed (`2>&-`): diagnostics go to /dev/null,
        _reserve_stderr()                 # and no store file opened later can become fd 2
    if sys.stdin is None:                 # started with stdin closed (`<&-`): it reads as empty, as /dev/null does,
        _reserve_stdin()                  # and no store file opened later can become fd 0 and be read as input
    if sys.stdout is None:                # started with stdout closed (`trace stats >&-`)
        say("trace: error: standard output is closed; redirect it (to /dev/null to discard it)\n")
        return 2
    return None


def _reserve_stdin() -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
        os.close(null)
    sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)


def _reserve_stderr() -> None:
    to_devnull(2)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def guarded(body: Callable[[], int]) -> int:
    """`body`'s exit code, or the one its exception stands for."""
    debug = bool(os.environ.get("TRACE_DEBUG"))
    try:
        code = body()
    except BaseException as exc:
        code = exit_code_for(exc, debug)
        if code is None:
            raise
    return flushed(code)


def exit_code_for(exc: BaseException, debug: bool) -> int | None:
    """The exit code for `exc`, after saying what went wrong; None for
    what is not ours to handle (SystemExit)."""
    if isinstance(exc, TraceError):
        _traceback(debug)
        say(f"trace: error: {exc}{_retry(exc)}\n")
        return exc.exit_code
    if isinstance(exc, (ReaderGone, BrokenPipeError)):
        # The reader went away (`trace export | head`): not an error of ours.
        silence_stdout()
        return 0
    if isinstance(exc, KeyboardInterrupt):
        say("trace: interrupted\n")
        return 130
    if isinstance(exc, OSError):                 # the machine said no: a path, a permission, a full disk
        _traceback(debug)
        where = f": {exc.filename}" if exc.filename else ""
        say(f"trace: error: {exc.strerror or exc}{where} (check the path, the store location "
            f"(--store / TRACE_HOME), permissions and free space)\n")
        return 1
    if isinstance(exc, Exception):               # a bug: one line, traceback on request
        _traceback(debug)
        say(f"trace: error: {type(exc).__name__}: {exc} "
            f"(set TRACE_DEBUG=1 for a traceback, and please report it)\n")
        return 1
    return None


def _retry(exc: TraceError) -> str:
    """How to wait for the writer holding the store, in this CLI's terms."""
    if not isinstance(exc, StoreLocked) or exc.waited is None:
        return ""
    if exc.waited:
        return f" (waited {exc.waited:g} s); retry with a longer --wait SECONDS"
    return "; retry with --wait SECONDS"


def flushed(code: int) -> int:
    """`code`, once stdout is flushed (a reader gone by then is no error)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    return code


def silence_stdout() -> None:
    to_devnull(sys.stdout.fileno())


def _traceback(debug: bool) -> None:
    if debug:
        import traceback
        traceback.print_exc()
