"""`trace digest`: the bounded, paste-able digest of what the sweep knows."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "One line per live fact (its latest value and `trace show SEQ`), then recent episodes, in at most "
        "--max-lines lines; what does not fit moves to linked detail pages (digest.d/<topic>.md), "
        "lowest importance first. Superseded and deleted values never appear. With --out, a page edited "
        "by hand since TRACE wrote it is not overwritten: TRACE writes PAGE.proposed and prints a unified "
        "diff. Paste it into CLAUDE.md or AGENTS.md, or have them include it. Run `trace sweep` first.\n\n"
        "Examples:\n\n"
        "  trace digest --max-lines 60\n\n"
        "  trace digest --out ~/project/docs/MEMORY.md"))
    def digest(
        ctx: typer.Context,
        max_lines: Annotated[int, typer.Option("--max-lines", "-n", min=1, metavar="N",
                                               help="Lines the digest may have.")] = 80,
        out_file: Annotated[str | None, typer.Option("--out", "-o", metavar="FILE",
                                                     help="Write it here (its directory must exist; - is stdout).")] = None,
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import state

        from stores.sweep import NOT_SWEPT, swept

        if out_file == "-":                        # stdout, as - is everywhere in TRACE (not a file named "-")
            out_file = None
        st = state(ctx)
        out = st.output(json_out)
        store = st.store(out)
        result = store.digest(out_file, max_lines=max_lines)
        if not swept(store):
            out.note(NOT_SWEPT)
        if result.digest.demoted:
            out.note(f"{len(result.digest.demoted)} lower-importance entr"
                     f"{'y' if len(result.digest.demoted) == 1 else 'ies'} moved to detail pages")
        for page in result.proposed:
            out.warn(f"{page[:-len('.proposed')]} was edited by hand since TRACE wrote it: left as it is; "
                     f"the new version is {page} (diff on stdout)")
        if out_file is None:
            if json_out:
                out.emit({**result.to_dict(), "text": result.digest.text, "demotions": result.digest.demoted})
            else:
                out.raw(result.digest.text)
            return 0
        if result.diffs:
            out.raw("".join(result.diffs))
        elif out.quiet:
            pass                                   # -q (cron): written; nothing to say
        elif out.json:
            out.emit(result.to_dict())
        else:
            out.console.print(f"wrote {result.path} ({result.digest.lines} lines, {result.digest.facts} facts, "
                              f"{len(result.digest.demoted)} demoted)", markup=False)
        return 0
