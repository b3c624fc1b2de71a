"""Option aliases shared by every command, so a flag means the same thing
everywhere (hf CLI habit)."""
from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Output JSON Lines even on a terminal.")]
WaitOpt = Annotated[float, typer.Option(
    "--wait", metavar="SECONDS", min=0,
    help="Wait this long for another writer to finish before giving up (exit 4).")]
SessionOpt = Annotated[str | None, typer.Option("--session", "-s", metavar="ID", help="Session id.")]
