"""`trace export`: the log as trace-format JSONL, artifacts inlined."""
from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Write the log (or one session) as JSON Lines in the `trace` format, with each artifact's "
        "content inlined as artifact_content (and an event's images and documents as "
        "attachments_content). `trace ingest --format trace` reads it back and adds nothing twice.\n\n"
        "Example:  trace export --session 5b1f0c2e > session.trace.jsonl"))
    def export(
        ctx: typer.Context,
        session: Annotated[str | None, typer.Option("--session", "-s", metavar="ID", help="Only this session.")] = None,
        no_artifacts: Annotated[bool, typer.Option("--no-artifacts", help="Do not inline artifact content.")] = False,
    ) -> int:
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(True)
        result = st.store(out).export(session, with_artifacts=not no_artifacts)
        n = out.emit_many(result.events)
        if n == 0 and result.session_id:
            out.warn(f"session {result.session_id} has no events; `trace sessions` lists them")
            return 1
        return 0
