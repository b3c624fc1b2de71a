"""`trace state show`: a session's working state, as ingest keeps it."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt

state_app = typer.Typer(help=("A session's working state: current task, open steps, completed steps, open "
                              "files, recent decisions, blockers. Kept by ingest as `task_state` events."),
                        no_args_is_help=True)


@state_app.command("show", help=(
    "The latest working state of a session (exit 3 when it has none yet).\n\n"
    "Example:  trace state show --session 5b1f0c2e"))
def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Option("--session", "-s", metavar="ID", help="The session.")],
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state

    st = state(ctx)
    out = st.output(json_out)
    found = st.store(out).state(session)
    if out.json:
        out.emit(found.to_dict())
    else:
        out.console.print(f"session {session} · task_state #{found.seq}" + (f" · {found.ts}" if found.ts else ""),
                          markup=False)
        out.console.print(found.text, markup=False)
    return 0
