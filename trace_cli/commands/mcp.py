"""`trace mcp`: serve TRACE's tools to an agent over stdio (MCP)."""
from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    # short_help: the command list shows the first paragraph only, which
    # would end at "e.g." without the registration line.
    @app.command(short_help=(
        "Run a Model Context Protocol server on stdin/stdout exposing recall, show and context (and notes, "
        "working state and digest) as tools an agent calls itself (see trace mcp --help to register it)."), help=(
        "Run a Model Context Protocol server on stdin/stdout exposing recall, show and context (and notes, "
        "working state and digest) as tools an agent calls itself. Register it with your agent, e.g.\n\n"
        "  claude mcp add --transport stdio --scope user trace -- /path/to/.venv/bin/trace mcp\n\n"
        "stdout carries the protocol only; diagnostics go to stderr."))
    def mcp(ctx: typer.Context) -> int:
        from trace_cli.app_state import state
        from trace_cli.mcp_server import serve     # the mcp SDK loads only for this command

        st = state(ctx)
        out = st.output(True)
        serve(st.store(out))
        return 0
