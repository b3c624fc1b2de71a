"""`trace anatomy record|replay|diff`: what each model call had in context."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from trace_cli.options import JsonOpt

app = typer.Typer(
    name="anatomy", no_args_is_help=True, add_completion=False,
    help=("Context anatomy (paper 9.6): one record per model call — what its context held, slice by slice — "
          "and replay of a session's calls. Records come from `trace anatomy record` (request bodies), "
          "`trace ingest` (logged API calls and captures; Claude Code and Codex transcripts, with their own "
          "usage figures and compactions) and every `trace context` render."))

SessionReq = Annotated[str, typer.Option("--session", "-s", metavar="ID", help="The session.")]
WindowOpt = Annotated[int | None, typer.Option(
    "--window", min=1, metavar="TOKENS",
    help="The model's context window, for contextUtilPct (default: known from the model name).")]

_RECORD_HELP = """Record model calls from request bodies: one anatomy record per call.

Reads FILE (or - for stdin): one JSON object, a JSON array or JSON Lines of
Anthropic Messages bodies (system, tools, messages), OpenAI Chat Completions
bodies (messages, tools) or Responses API bodies (instructions, input,
tools); logged calls {"request", "response"} and HTTP captures of them too.
A saved `response` adds its `usage` (the real token count).

Each record has the Annex A.4 fields (turnId, sessionId, compactionCycle,
contextUtilPct, systemPromptBytes, workspaceFileBytes, skillBytes,
toolSchemaBytes, historyEventCount, markerCount, userMessageBytes,
topicLabel, topicTransition), bytes and tokens per slice, the model, the
window, the response usage and a sha256 of the request.

Recognised inside the system prompt and messages:
 workspace files: `Contents of …/CLAUDE.md (…):` sections (also AGENTS.md,
 CLAUDE.local.md, GEMINI.md) as Claude Code injects them, Codex's
 `# AGENTS.md instructions for <dir>` + <INSTRUCTIONS> and
 <user_instructions> blocks;
 skills: <skill>…</skill> sections, <skills_instructions> blocks, a message
 starting `Base directory for this skill:`;
 reminders: <system-reminder>…</system-reminder> blocks;
 TRACE markers and <recalled-context> blocks.

Bytes are UTF-8 bytes of the text as sent (tool schemas as compact JSON);
tokens are cl100k_base counts. The window is --window, else known from the
model name; an unknown model gets no utilisation (a warning says so).

Example:  trace anatomy record calls.jsonl --session agent-7 --window 200000"""


@app.command("record", help=_RECORD_HELP)
def record(
    ctx: typer.Context,
    files: Annotated[list[str] | None, typer.Argument(metavar="[FILE|-]...", show_default=False)] = None,
    session: SessionReq = ...,
    window: WindowOpt = None,
    json_out: JsonOpt = False,
) -> int:
    from stores.errors import UsageError
    from trace_cli.app_state import opened

    out, store = opened(ctx, json_out)
    if not files:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("give FILE (request bodies), or - to read them from stdin")
        files = ["-"]
    result = store.record_calls(files, session=session, window=window)
    for model in result.unknown_models:
        out.warn(f"model {model} has no known context window: utilisation left out (pass --window TOKENS)")
    if out.json:
        out.emit_many(result.public_records())
    else:
        out.table(["turnId", "model", "tokens", "util %", "system B", "tools B", "workspace B", "skills B",
                   "messages", "markers", "user B", "topic"],
                  ([r["turnId"], r.get("model") or "", r["contextTokens"], _pct(r["contextUtilPct"]),
                    r["systemPromptBytes"], r["toolSchemaBytes"], r["workspaceFileBytes"], r["skillBytes"],
                    r["messageCount"], r["markerCount"], r["userMessageBytes"], r.get("topicLabel") or ""]
                   for r in result.records), title=f"session {session}")
    out.note(f"{result.added} call(s) recorded for session {session}"
             + (f", {result.skipped} already recorded" if result.skipped else "")
             + (f", {result.other_traffic} other capture exchange(s) passed over" if result.other_traffic else ""))
    return 0


@app.command("replay", help=(
    "A session's calls in order: turn, utilisation, compaction cycle, markers, events, topic and transitions "
    "(a table with a utilisation sparkline on a terminal, JSON Lines when piped or with --json). --turn N "
    "rebuilds what call N had in context: its slices, the markers present and the log events. --html FILE "
    "writes a self-contained report (stacked slices per call, compactions marked, details on click). "
    "Exit 1 when the session has no records or N is not one of its calls (the line says which are); "
    "2 for an N that is not a number.\n\n"
    "Example:  trace anatomy replay --session 5b1f0c2e --html anatomy.html"))
def replay(
    ctx: typer.Context,
    session: SessionReq,
    turn: Annotated[int | None, typer.Option("--turn", "-t", metavar="N", help="One call, rebuilt (1 is the first).")] = None,
    html_file: Annotated[Path | None, typer.Option("--html", metavar="FILE", help="Write the HTML report here (- for stdout).")] = None,
    window: WindowOpt = None,
    json_out: JsonOpt = False,
) -> int:
    from stores.anatomy import replay as api
    from trace_cli.app_state import opened

    to_stdout = html_file is not None and str(html_file) == "-"     # not a file named "-"
    if to_stdout and turn is not None:
        from stores.errors import UsageError
        raise UsageError("--html - and --turn would both print to stdout: write the page to a file (--html FILE)")
    out, store = opened(ctx, json_out)
    if html_file is not None:
        if not to_stdout:
            _check_writable_place(html_file)
        page = api.html_report(store, session, window)
        if to_stdout:
            out.raw(page)
            return 0
        html_file.write_text(page, encoding="utf-8")
        out.note(f"wrote {html_file} ({len(page.encode()):,} bytes)")
        if turn is None:
            return 0
    result = store.replay(session, turn=turn, window=window)
    if turn is not None:
        if out.json:
            out.emit(result.turn)
        else:
            _print_turn(out, result.turn)
        return 0
    rows = result.calls
    if out.json:
        out.emit_many(rows)
        return 0
    _print_timeline(out, session, rows)
    return 0


@app.command("diff", help=(
    "What entered and left the context between calls A and B of a session: the events (each one that left "
    "says why when it can: evicted into a marker, dropped to fit the budget), the markers, and the change "
    "per slice. The direct answer to \"when did X fall out\". B before A shows the change backwards. Exit 1 "
    "when the session has no records or A or B is not one of its calls; 2 for one that is not a number.\n\n"
    "Example:  trace anatomy diff --session 5b1f0c2e 2 5"))
def diff(
    ctx: typer.Context,
    a: Annotated[int, typer.Argument(metavar="A", help="The earlier call.")],
    b: Annotated[int, typer.Argument(metavar="B", help="The later call.")],
    session: SessionReq,
    window: WindowOpt = None,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import opened

    out, store = opened(ctx, json_out)
    result = store.diff(session, a, b, window=window)
    summary, changes = result.summary, result.changes
    if out.json:
        out.emit(summary)
        out.emit_many(changes)
        return 0
    out.console.print(f"calls {a} → {b}: {summary['left']} left, {summary['entered']} entered; "
                      f"cycle {summary['cycle'][0]} → {summary['cycle'][1]}; "
                      f"tokens {summary['contextTokens'][0]} → {summary['contextTokens'][1]}", markup=False)
    out.table(["slice", f"tokens at {a}", f"tokens at {b}"], ([s, x, y] for s, (x, y) in summary["slices"].items()))
    out.table(["change", "seq / #", "kind", "why", "snippet"],
              ([c["change"], c.get("seq", c.get("index")), c.get("kind", c.get("role")), _why(c),
                _short(c.get("snippet", f"{c.get('what')} of {c.get('bytes')} bytes"))] for c in changes))
    return 0


def _print_timeline(out, session: str, rows: list[dict]) -> None:
    """The timeline for a terminal: what all calls share goes in the title,
    so the table fits 80 columns."""
    from reducers.anatomy.timeline import sparkline
    width = max(20, min(out.console.width - 14, 120))
    out.console.print(f"utilisation  {sparkline([r['contextUtilPct'] for r in rows], width)}", markup=False)
    models = sorted({r["model"] for r in rows if r["model"]})
    origins = sorted({r["origin"] for r in rows if r["origin"]})
    threads = {r["thread"] for r in rows}
    days = {(r["ts"] or "")[:10] for r in rows}
    columns = ["#", "time", "tokens", "util%", "cycle", "markers", "events", "topic", "↻"]
    extra = [c for c, many in (("model", len(models) > 1), ("origin", len(origins) > 1), ("thread", len(threads) > 1))
             if many]

    def row(r: dict) -> list:
        ts = r["ts"] or ""
        when = ts[11:19] if len(days) == 1 else ts[5:16].replace("T", " ")
        cells = [r["turn"], when, r["contextTokens"], _pct(r["contextUtilPct"]),
                 f"{r['compactionCycle']}{' ⟲' if r['compacted'] else ''}", r["markerCount"], r["historyEventCount"],
                 r["topicLabel"] or "", "◆" if r["topicTransition"] else ""]
        return cells + [_short(str(r[c] or ""), 14) for c in extra]
    title = " · ".join(x for x in (f"session {session}", ", ".join(models) if len(models) == 1 else "",
                                    origins[0] if len(origins) == 1 else "",
                                    next(iter(days)) if len(days) == 1 else "") if x)
    out.table(columns + extra, (row(r) for r in rows), title=title)


def _pct(value) -> str:
    return "" if value is None else f"{value:.1f}"


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _why(change: dict) -> str:
    if change.get("reason") == "evicted":
        return f"evicted → marker {change.get('markerSeq')}"
    return change.get("reason") or ""


def _print_turn(out, shown: dict) -> None:
    r = shown["record"]
    out.console.print(f"call {shown['turn']} of {shown['turns']} · {r.get('ts') or ''} · {r.get('origin')} · "
                      f"{r.get('model') or 'model not named'} · {r.get('contextTokens')} tokens"
                      + (f" · {r['contextUtilPct']}% of {r['window']}" if r.get("contextUtilPct") is not None else "")
                      + f" · cycle {r.get('compactionCycle')}", markup=False)
    fields = ("systemPromptBytes", "workspaceFileBytes", "skillBytes", "toolSchemaBytes", "historyEventCount",
              "markerCount", "userMessageBytes", "topicLabel", "topicTransition")
    out.table(["A.4 field", "value"], ([f, r.get(f)] for f in fields))
    out.table(["slice", "tokens", "bytes"], ([s, c.get("tokens"), c.get("bytes")] for s, c in (r.get("slices") or {}).items()))
    if shown.get("events") is not None:
        out.table(["seq", "kind", "tokens", "snippet"],
                  ([e["seq"], e["kind"] + (" (marker)" if e.get("marker") else ""), e["tokens"], e["snippet"]]
                   for e in shown["events"]), title=f"in context: {len(shown['events'])} events")
    elif r.get("messages"):
        out.table(["#", "role", "bytes", "tokens", "slices"],
                  ([m["i"], m["role"], m["bytes"], m["tokens"], ", ".join(f"{k} {v}" for k, v in m["slices"].items())]
                   for m in r["messages"]), title="messages sent")
    if shown.get("note"):
        out.note(shown["note"])


def _check_writable_place(path: Path) -> None:
    """A report path whose folder is missing, or that is a folder, named
    before any work is done."""
    from stores.errors import TraceError
    if path.is_dir():
        raise TraceError(f"--html {path} is a directory; name the file to write, e.g. {path / 'anatomy.html'}")
    if not path.absolute().parent.is_dir():
        raise TraceError(f"--html {path}: the directory {path.absolute().parent} does not exist; "
                         f"create it or choose another path")
