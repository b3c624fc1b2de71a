"""`trace sessions`: which sessions the store holds, newest first."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Every session with its format, source, first and last time, event count and title (or first user "
        "line), newest first. Any command taking --session accepts a unique prefix of these ids.\n\n"
        "Examples:\n\n"
        "  trace sessions --since 3d\n\n"
        "  trace sessions --source codex --grep gateway"))
    def sessions(
        ctx: typer.Context,
        source: Annotated[str | None, typer.Option(
            "--source", metavar="FORMAT|PATH", help="Only sessions of this format, or whose source path holds this.")] = None,
        since: Annotated[str | None, typer.Option(
            "--since", metavar="TIME", help="Only sessions active since then (ISO 8601 or an age: 3d, 12h).")] = None,
        grep: Annotated[str | None, typer.Option(
            "--grep", metavar="TEXT", help="Only sessions whose id, title or source path holds TEXT.")] = None,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(json_out)
        found = st.store(out).sessions(source=source, since=since, grep=grep).sessions
        if not found:
            out.note("no sessions match" if (source or since or grep) else "the store holds no sessions yet")
            return 3
        if out.json:
            out.emit_many(s.to_dict() for s in found)
            return 0
        out.table(["session", "format", "first", "last", "events", "title / first line"],
                  ([s.session_id, s.format or "-", _minute(s.first_ts), _minute(s.last_ts), s.events, s.title or ""]
                   for s in found),
                  title=f"{len(found)} session(s), newest first")
        return 0


def _minute(ts: str | None) -> str:
    return (ts or "")[:16].replace("T", " ")
