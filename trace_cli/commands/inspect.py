"""`trace stats`: what the store holds."""
from __future__ import annotations

import typer

from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help="Events by kind and session, segments, bytes, artifacts.")
    def stats(ctx: typer.Context, json_out: JsonOpt = False) -> int:
        from trace_cli.app_state import opened

        out, store = opened(ctx, json_out, must_exist=True)     # zeros for a mistyped --store would mislead
        s = store.stats()
        if out.json:
            out.emit(s.to_dict())
            return 0
        out.table(["", ""], [
            ("store", s.store), ("events", s.events), ("tokens", s.tokens), ("sessions", s.sessions),
            ("last seq", s.last_seq), ("segments", s.segments), ("log bytes", s.bytes),
            ("artifacts", f"{s.artifacts} ({s.artifact_bytes} bytes compressed)"),
        ], title="TRACE store")
        if s.by_kind:
            out.table(["kind", "events"], s.by_kind.items(), title="by kind")
        if s.by_session:
            shown = s.by_session[:20]
            out.table(["session", "events", "tokens", "first", "last"],
                      ([r["session_id"], r["events"], r["tokens"], _minute(r["first_ts"]), _minute(r["last_ts"])]
                       for r in shown),
                      title=f"sessions (latest {len(shown)} of {s.sessions}; `trace sessions` lists them all)")
        return 0


def _minute(ts: str | None) -> str:
    """A timestamp to the minute, readable in a narrow table (--json has it whole)."""
    return (ts or "")[:16].replace("T", " ")
