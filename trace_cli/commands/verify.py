"""`trace verify`: prove the log was not altered (exit 5 if it was; exit 6
when only derived files are damaged), and `--repair` what can be repaired."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Re-derive every hash: each line parses, seq strictly increases (a missing seq is a missing event), "
        "the hash chain holds, and every artifact matches its sha256; check every derived file (the "
        "indexes, state.db, cache/) against its checksum and the log. Exit 5 naming segment and line when "
        "the log or an artifact is damaged; exit 6 when only derived files are (the log is intact). "
        "--repair rebuilds damaged derived files from the log and records events the log lost (so writers "
        "append again and those seqs are never reused); it never rewrites or removes a log line."))
    def verify(
        ctx: typer.Context,
        skip_artifacts: Annotated[bool, typer.Option("--skip-artifacts", help="Do not re-hash artifacts.")] = False,
        repair: Annotated[bool, typer.Option(
            "--repair", help="Rebuild damaged derived files and record what the log lost, then verify again.")] = False,
        wait: WaitOpt = 0.0,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import opened

        out, store = opened(ctx, json_out)
        repaired = None
        if repair:
            from stores.integrity.repair import repair as run_repair
            result = run_repair(store, wait=wait)
            report, repaired = result.after, result.repaired
            for action in repaired:
                out.note(f"repair: {action}")
        else:
            report = store.verify(check_artifacts=not skip_artifacts)
        for note in report.notes:
            out.note(note)
        for p in report.problems:
            out.problem(p.at(store.dir))
        for p in report.derived:
            out.problem(p.at(store.dir))
        summary = report.to_dict()
        if repaired is not None:
            summary["repaired"] = repaired
        if out.json:
            out.emit(summary)
        else:
            verdict = ("[green]ok[/]" if report.ok else f"[red]FAILED[/] ({len(report.problems)} problem(s))"
                       if report.problems else f"[yellow]DERIVED FILES DAMAGED[/] ({len(report.derived)}; the log "
                                               f"is intact: `trace verify --repair` rebuilds them)")
            out.console.print(f"verify {verdict}: {report.events} events in {report.segments} segment(s), "
                              f"{report.artifacts} artifact(s) checked, last seq {report.last_seq}")
        return report.exit_code
