"""`trace show`: events verbatim, by seq, range, id or session."""
from __future__ import annotations

from typing import Annotated

import typer

from stores.errors import TraceError, UsageError
from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Print events exactly as logged. SELECTOR is a seq (812), a range (812..947) or an event id; "
        "with --session, a range prints that session's events only. "
        "--marker ID prints what a compaction marker evicted. "
        "--full replaces artifact previews with the original output; for a single event with an "
        "artifact it writes the original bytes as they were (use --json to get the event instead).\n\n"
        "Examples:\n\n"
        "  trace show 812..947\n\n"
        "  trace show 812..947 --session 4f1c…\n\n"
        "  trace show 812 --full > output.txt\n\n"
        "  trace show --session 4f1c… --tail 20"))
    def show(
        ctx: typer.Context,
        selector: Annotated[str | None, typer.Argument(metavar="SEQ|SEQ..SEQ|ID")] = None,
        session: Annotated[str | None, typer.Option("--session", "-s", metavar="ID",
                                                    help="Every event of a session (with a range: its events in it).")] = None,
        marker: Annotated[str | None, typer.Option("--marker", "-m", metavar="ID",
                                                   help="The events a marker's span evicted.")] = None,
        tail: Annotated[int | None, typer.Option("--tail", "-n", min=1, help="With --session: only the last N.")] = None,
        full: Annotated[bool, typer.Option("--full", help="Rehydrate artifacts byte-exact.")] = False,
        raw: Annotated[bool, typer.Option("--raw", help="Print only the text of each event.")] = False,
        json_out: JsonOpt = False,
    ) -> int:
        from stores.lookup import attachment_blocks, events_by_selector, full_text, parse_selector, session_events
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(json_out)
        store = st.store(out)
        if marker and (selector or session) or not (selector or session or marker):
            raise UsageError("give SELECTOR (seq, range, id), --session ID, both (a range within a session) "
                             "or --marker ID alone")
        if tail and not session:
            raise UsageError("--tail goes with --session")
        if selector:
            parse_selector(selector)               # a malformed selector is a usage error, store or not
        store.require()
        if session:
            from stores.sessions import resolve_session
            session = resolve_session(store, session)
        if marker:
            from stores.lookup import marker_events
            events = marker_events(store, marker)
        elif selector:
            events = [e for e in events_by_selector(store, selector) if not session or e["session_id"] == session]
            events = events[-tail:] if tail else events
        else:
            events = list(session_events(store, session, tail))
        if not events:
            what = " ".join(filter(None, (selector, session and f"in session {session}", marker and f"marker {marker}")))
            raise TraceError(f"no event matches {what}; `trace sessions` lists sessions, `trace stats` the last seq")
        if full and len(events) == 1 and events[0].get("artifact") and not json_out:
            for chunk in store.artifacts.iter_bytes(events[0]["artifact"]["id"]):
                out.raw(chunk)
            return 0
        if full:
            events = [{**e, "text": full_text(store, e), "full": True} if e.get("artifact") else e for e in events]
            if out.json:
                events = [{**e, "attachments_content": attachment_blocks(store, e)}
                          if (e.get("meta") or {}).get("attachments") else e for e in events]
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
