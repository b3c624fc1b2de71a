"""`trace verify`: prove the log was not altered (exit 5 if it was)."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Re-derive every hash: each line parses, seq strictly increases, the hash chain holds, and "
        "every artifact matches its sha256. Exit 5 naming segment and line on any failure."))
    def verify(
        ctx: typer.Context,
        skip_artifacts: Annotated[bool, typer.Option("--skip-artifacts", help="Do not re-hash artifacts.")] = False,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(json_out)
        store = st.store(out)
        report = store.verify(check_artifacts=not skip_artifacts)
        for note in report.notes:
            out.note(note)
        for p in report.problems:
            out.problem(p.at(store.dir))
        summary = {"ok": report.ok, "events": report.events, "segments": report.segments,
                   "artifacts": report.artifacts, "last_seq": report.last_seq,
                   "problems": [str(p) for p in report.problems]}
        if out.json:
            out.emit(summary)
        else:
            verdict = "[green]ok[/]" if report.ok else f"[red]FAILED[/] ({len(report.problems)} problem(s))"
            out.console.print(f"verify {verdict}: {report.events} events in {report.segments} segment(s), "
                              f"{report.artifacts} artifact(s) checked, last seq {report.last_seq}")
        return 0 if report.ok else 5
