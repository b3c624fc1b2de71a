"""`trace show`: events verbatim, by seq, range, id or session."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Print events exactly as logged. SELECTOR is a seq (812), a range (812..947), a list of them "
        "(812..830,835,840..947: what a marker names) or an event id; "
        "with --session, a range prints that session's events only. "
        "--marker ID prints what a compaction marker evicted. "
        "--full replaces artifact previews with the original output; for a single event with an "
        "artifact it writes the original bytes as they were (use --json to get the event instead).\n\n"
        "Examples:\n\n"
        "  trace show 16..28\n\n"
        "  trace show 1..40 --session 5b1f0c2e\n\n"
        "  trace show 23 --full > output.txt\n\n"
        "  trace show --session 5b1f0c2e --tail 20"))
    def show(
        ctx: typer.Context,
        selector: Annotated[str | None, typer.Argument(metavar="SEQ|SEQ..SEQ[,…]|ID")] = None,
        session: Annotated[str | None, typer.Option("--session", "-s", metavar="ID",
                                                    help="Every event of a session (with a range: its events in it).")] = None,
        marker: Annotated[str | None, typer.Option("--marker", "-m", metavar="ID",
                                                   help="The events a marker's span evicted.")] = None,
        tail: Annotated[int | None, typer.Option("--tail", "-n", min=1, help="With --session: only the last N.")] = None,
        full: Annotated[bool, typer.Option("--full", help="Rehydrate artifacts byte-exact.")] = False,
        raw: Annotated[bool, typer.Option("--raw", help="Print only the text of each event.")] = False,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(json_out)
        result = st.store(out).show(selector, session=session, marker=marker, tail=tail, full=full,
                                    original=not json_out)
        if result.original is not None:
            for chunk in result.original:
                out.raw(chunk)
            return 0
        events = result.events
        if raw:
            for e in events:
                out.raw(e["text"] if e["text"].endswith("\n") else e["text"] + "\n")
        elif out.json:
            out.emit_many(events)
        else:
            for e in events:
                _print_event(out, e)
        return 0


def _print_event(out, e: dict) -> None:
    tool = e.get("tool") or {}
    label = f" {tool.get('name')}" if tool.get("name") else ""
    art = e.get("artifact")
    extra = f"  [artifact {art['id'][:12]}… {art['bytes']} bytes, {art['tokens']} tokens]" if art and not e.get("full") else ""
    inferred = (e.get("meta") or {}).get("ts_inferred")
    when = f"{e['ts']} (inferred from the {inferred})" if e.get("ts") and inferred else \
        e.get("ts") or f"{e.get('ingested_at')} (ingested; the source gave no time)"
    out.console.rule(f"[bold]#{e['seq']}[/] {e['kind']}{label}  {when}  "
                     f"session {e['session_id']}{extra}", align="left")
    out.raw(e["text"] + ("" if e["text"].endswith("\n") else "\n"))
