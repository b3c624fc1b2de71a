"""`trace note add|list`: notes an agent or a person asks TRACE to keep."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from trace_cli.options import JsonOpt, SessionOpt, WaitOpt

note_app = typer.Typer(help=("Notes that survive compaction: decisions, preferences, corrections, task "
                             "progress. Kept in the log as `note` events, never evicted."),
                       no_args_is_help=True)

CategoryOpt = Annotated[str, typer.Option("--category", "-c", metavar="task|decision|preference|correction|context",
                                          help="What kind of note.")]


@note_app.command("add", help=(
    "Add a note (TEXT, or stdin when TEXT is - or left out and stdin is a pipe). Without --session the "
    "note is global: for every session. --session names a session the store holds (an id or a unique "
    "prefix; `trace sessions` lists them): an unknown one is refused, never made into a new session.\n\n"
    "Examples:\n\n"
    "  trace note add --category decision \"squash-merge PRs; never rebase shared branches\"\n\n"
    "  echo \"staging DB is read-only until Friday\" | trace note add -c context -s 5b1f0c2e"))
def add(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The note (- for stdin).")] = None,
    category: CategoryOpt = ...,
    session: SessionOpt = None,
    wait: WaitOpt = 0.0,
    json_out: JsonOpt = False,
) -> int:
    from stores.errors import UsageError
    from trace_cli.app_state import state

    if text is None or text == "-":
        if text is None and sys.stdin.isatty():
            raise UsageError("say what to note: trace note add --category decision \"TEXT\" (or pipe it in)")
        text = _utf8(sys.stdin.buffer.read())
    st = state(ctx)
    out = st.output(json_out)
    note = st.store(out).add_note(text, category, session, wait=wait)
    if out.json:
        out.emit(note.to_dict())
    else:
        out.console.print(f"noted #{note.seq} ({note.category}) in session {note.session_id}", markup=False)
    return 0


def _utf8(data: bytes) -> str:
    """The note piped in, refused unless UTF-8 (as a command-line argument
    or a transcript line is): the log would keep U+FFFD for its bytes."""
    from stores.errors import UsageError
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the note on stdin is not valid UTF-8 (byte {exc.start + 1} is 0x{data[exc.start]:02x}); "
                         f"pass text in UTF-8 (`iconv -f latin1 -t utf-8` converts Latin-1)") from None


@note_app.command("list", help="Notes, newest first: a session's own and the global ones, or all of them.")
def list_(
    ctx: typer.Context,
    session: SessionOpt = None,
    category: Annotated[str | None, typer.Option("--category", "-c", metavar="CATEGORY",
                                                 help="Only notes of this category.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="At most this many.")] = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import state

    st = state(ctx)
    out = st.output(json_out)
    notes = st.store(out).notes(session, category=category, limit=limit).notes
    if not notes:                              # found nothing: said on stderr, exit 3 (a script can tell)
        where = " ".join(w for w in (f"of category {category!r}" if category else "",
                                     f"in session {session!r}" if session else "") if w)
        out.note(f"no notes{' ' + where if where else ''}: `trace note add TEXT -c CATEGORY` writes one")
        return 3
    if out.json:
        out.emit_many(n.to_dict() for n in notes)
    else:
        out.table(["seq", "time", "session", "category", "note"],
                  ([n.seq, (n.ts or "")[:16].replace("T", " "), n.session_id, n.category, n.text]
                   for n in notes), title=f"{len(notes)} note(s)")
    return 0
