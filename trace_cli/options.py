"""Option aliases shared by every command, so a flag means the same thing
everywhere (hf CLI habit)."""
from __future__ import annotations

import math
from typing import Annotated

import typer

def _seconds(value: float) -> float:
    if not math.isfinite(value):                  # min=0 lets nan through; inf would wait forever
        raise typer.BadParameter(f"{value} is not a number of seconds")
    return value


JsonOpt = Annotated[bool, typer.Option("--json", help="Output JSON Lines even on a terminal.")]
WaitOpt = Annotated[float, typer.Option(
    "--wait", metavar="SECONDS", min=0, callback=_seconds,
    help="Wait this long for another writer to finish before giving up (exit 4).")]
SessionOpt = Annotated[str | None, typer.Option("--session", "-s", metavar="ID", help="Session id.")]
