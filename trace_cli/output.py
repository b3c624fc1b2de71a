"""One object decides how results leave the process: JSON Lines when stdout
is not a terminal or --json is given, Rich tables on a terminal; notes,
warnings and progress always on stderr so stdout stays clean data."""
from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Iterable

import orjson

_JSON_OPTS = orjson.OPT_NON_STR_KEYS


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(value: Any):
    """Data for a terminal cell: a Rich Text (never read as markup: a session
    named `[/]` is just characters) without control characters (an ESC from
    a transcript must not drive the terminal)."""
    from rich.text import Text
    return Text(_CONTROL.sub("", "" if value is None else str(value)))


class ReaderGone(Exception):
    """stdout's reader closed the pipe (`trace export | head`). Not an
    OSError on purpose: click turns an EPIPE OSError into exit 1."""


def _json_line(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj, option=_JSON_OPTS, default=str) + b"\n"
    except (TypeError, orjson.JSONEncodeError):     # a lone surrogate (a bad session id named in a result), a huge int
        return json.dumps(obj, default=str).encode("ascii") + b"\n"


def say(text: str) -> None:
    """`text` on stderr. A reader gone from stderr is no reason to stop:
    the data on stdout may still be read, and the exit code still tells
    (from then on stderr goes to /dev/null)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except BrokenPipeError:
        to_devnull(sys.stderr.fileno())


def to_devnull(fd: int) -> None:
    """Point `fd` at /dev/null: a reader gone (or a stream closed at start)
    takes what is still written there, and no file opened later gets its number."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


def _write(data: bytes) -> None:
    try:
        sys.stdout.buffer.write(data)
    except BrokenPipeError:
        raise ReaderGone() from None


class Output:
    def __init__(self, json_mode: bool = False, quiet: bool = False):
        self.json = json_mode or not sys.stdout.isatty()
        self.json_asked = json_mode           # --json itself, not just a pipe
        self.quiet = quiet
        self._err_console = None
        self._out_console = None

    # -- data (stdout) -----------------------------------------------------

    def emit(self, obj: Any) -> None:
        _write(_json_line(obj))

    def emit_many(self, objs: Iterable[Any]) -> int:
        n = 0
        for obj in objs:
            _write(_json_line(obj))
            n += 1
        return n

    def raw(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        _write(data)

    def table(self, columns: list[str], rows: Iterable[Iterable[Any]], title: str | None = None) -> None:
        from rich.table import Table
        table = Table(title=terminal_text(title) if title else None, header_style="bold")
        for c in columns:
            table.add_column(c, overflow="fold")
        for row in rows:
            table.add_row(*(terminal_text(v) for v in row))
        self.console.print(table)

    @property
    def console(self):
        if self._out_console is None:
            from rich.console import Console
            self._out_console = Console(highlight=False)
        return self._out_console

    # -- diagnostics (stderr) ------------------------------------------------

    @property
    def err_console(self):
        if self._err_console is None:
            from rich.console import Console
            self._err_console = Console(stderr=True, highlight=False)
        return self._err_console

    def note(self, message: str) -> None:
        if not self.quiet:
            say(f"trace: {message}\n")

    def warn(self, message: str) -> None:
        say(f"trace: warning: {message}\n")

    def problem(self, message: str) -> None:
        """A `file:line: reason` report: printed as is, one line."""
        say(f"{message}\n")

    def stderr_is_tty(self) -> bool:
        return sys.stderr.isatty()
