"""`trace compact` and `trace context`: the context window as a cache."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt

SessionReq = Annotated[str, typer.Option("--session", "-s", metavar="ID", help="The session.")]
ProtectOpt = Annotated[list[str] | None, typer.Option(
    "--protect", metavar="TOOL", help="Tools whose calls and results are never evicted or cleared "
                                      "(repeatable; default TodoWrite and manage_todo_list).")]


WindowOpt = Annotated[int | None, typer.Option(
    "--window", min=1, metavar="TOKENS",
    help="The model's context window: compact first when the session's working set passes 75% of it.")]


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Evict old spans of a session's context until it fits --budget minus --headroom, leaving "
        "pointer markers (seq and time range, topic hints, a recall directive) — never summaries. "
        "Tool output and replies go before the user prompts of the same age (prompts are kept "
        "recent-first up to 20,000 tokens); the last --hot-tail turns stay unless nothing else is "
        "left, and then only their oldest completed tool pairs go — never a prompt, the newest pair or "
        "the last event. System/persona (the runtime's notices a pack would not show excepted), task state, "
        "notes, markers and each protected tool's latest state "
        "(TodoWrite, manage_todo_list) stay; a tool call never leaves without its result. Every evicted "
        "event stays in the log: `trace recall` or `trace show A..B` brings it back. Exits 1, saying what "
        "stopped it, when the budget cannot be reached. With --auto it compacts only when the working set "
        "has passed 75% of --window (for cron or a hook).\n\n"
        "Example:  trace compact --session 5b1f0c2e --budget 4000 --dry-run"))
    def compact(
        ctx: typer.Context,
        session: SessionReq,
        budget: Annotated[int, typer.Option("--budget", min=1, help="Context budget in tokens.")] = 4000,
        headroom: Annotated[int, typer.Option("--headroom", min=0, help="Tokens to leave free under the budget.")] = 200,
        hot_tail: Annotated[int, typer.Option("--hot-tail", min=0, help="Recent turns never evicted.")] = 3,
        strategy: Annotated[str, typer.Option("--strategy", metavar="pointer|truncate|narrative",
                                              help="pointer (markers); the baselines for comparison: truncate "
                                                   "(drop, leave nothing), narrative (extractive summary).")] = "pointer",
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; write nothing.")] = False,
        auto: Annotated[bool, typer.Option("--auto", help="Compact only when the working set passes 75% of --window.")] = False,
        window: WindowOpt = None,
        protect: ProtectOpt = None,
        wait: WaitOpt = 0.0,
        json_out: JsonOpt = False,
    ) -> int:
        from stores.errors import TraceError
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(json_out)
        result = st.store(out).compact(session, budget=budget, headroom=headroom, hot_tail=hot_tail,
                                       strategy=strategy, dry_run=dry_run, wait=wait, protect=protect,
                                       auto=auto, window=window)
        if out.json:
            out.emit(result.to_dict())
        elif result.auto and not result.auto["triggered"]:
            out.console.print(f"working set {result.auto['working_set_tokens']} tokens, under 75% of the "
                              f"{result.auto['window']}-token window: nothing to do")
        else:
            verb = "would evict" if dry_run else "evicted"
            out.console.print(f"cycle {result.cycle}: {verb} {result.evicted} events into {result.markers} marker(s); "
                              f"{result.tokens_before} → {result.tokens_after} tokens "
                              f"({result.cache_events} events left); eviction {result.latency_ms} ms, "
                              f"index catch-up {result.index_catchup_ms} ms")
            for m in result.new_markers:
                out.console.print(f"  {m['text']}", markup=False)
            if result.reflection:
                r = result.reflection
                out.console.print(f"reflection: {r['found']}/{r['checked']} sampled evicted events recallable"
                                  + (f"; missed {r['missed']}" if r["missed"] else ""))
        if not result.fits:
            raise TraceError(f"compaction could not reach the budget: {result.stopped}")
        return 0

    @app.command(help=(
        "The push pack: what the model should see next for a session, never over --budget and never "
        "without the current turn. Stable parts first (system/persona with the newest standing instructions, "
        "the runtime's other notices capped at 2,000 tokens newest first, task state, notes capped at 2,000 "
        "tokens newest first, markers in time order), then a <recalled-context> block for the latest "
        "user questions (this session only unless --cross-session; hits under --recall-min-score left "
        "out; capped at min(4000, 10% of the budget)), then the conversation. Tool output is "
        "middle-truncated to --tool-max-tokens, old results cleared to placeholders, old thinking cleared, "
        "and every call has its result. What does not fit goes least relevant first within its age "
        "(tool output before prompts; the current turn last, its prompt and newest pair never), and a "
        "marker in the pack names it: `trace show` with its ranges prints exactly what was left out. "
        "Reads only the session's tail, whatever the session or store size. Exits 1 naming the smallest "
        "possible pack when even that exceeds --budget. Each render leaves an anatomy record of exactly "
        "what it sent (`trace anatomy replay`).\n\n"
        "Example:  trace context --session 5b1f0c2e --budget 8000 --window 200000 --format openai"))
    def context(
        ctx: typer.Context,
        session: SessionReq,
        budget: Annotated[int, typer.Option("--budget", min=1, help="Tokens the pack may use.")] = 8000,
        query: Annotated[str | None, typer.Option("--query", "-q", help="Recall for this instead of the last user messages.")] = None,
        fmt: Annotated[str | None, typer.Option("--format", "-f", metavar="openai|anthropic|text|json", help=(
            "What to print (default: json, or text on a terminal)."))] = None,
        overflow: Annotated[bool, typer.Option("--overflow", help=(
            "The last call hit the context limit: shrink to 85%, then 72%, then 60% of --budget on "
            "successive calls (3 tries), each recorded."))] = False,
        window: WindowOpt = None,
        no_recall: Annotated[bool, typer.Option("--no-recall", help="Leave out the recalled-context block.")] = False,
        recall_min_score: Annotated[float, typer.Option("--recall-min-score", min=0.0, max=1.0, metavar="X",
                                                        help="Leave out recalled hits scoring under X (recall's calibrated score; see trace recall --help).")] = 0.5,
        cross_session: Annotated[bool, typer.Option("--cross-session", help="Recall from every session, not just this one.")] = False,
        tool_max_tokens: Annotated[int | None, typer.Option(
            "--tool-max-tokens", min=1, metavar="TOKENS",
            help="Middle-truncate tool output above this (50/50 head and tail; default TRACE_TOOL_MAX_TOKENS or 2000).")] = None,
        protect: ProtectOpt = None,
        keep_results: Annotated[int, typer.Option("--keep-tool-results", min=0, metavar="K",
                                                  help="Tool results always kept whole (the newest K).")] = 8,
        clear_trigger: Annotated[int, typer.Option("--clear-trigger", min=0, metavar="TOKENS",
                                                   help="Clear old tool results once they hold more than this.")] = 30_000,
        clear_at_least: Annotated[int, typer.Option("--clear-at-least", min=0, metavar="TOKENS",
                                                    help="Once clearing, clear at least this much.")] = 0,
    ) -> int:
        from trace_cli.app_state import opened

        out, store = opened(ctx, True)
        if fmt is None:                      # a person at a terminal reads the pack; a program gets JSON
            import sys
            fmt = "text" if sys.stdout.isatty() else "json"
        # record=False: the anatomy record is written after the pack is printed (below)
        result = store.context(session, budget=budget, query=query, fmt=fmt, overflow=overflow,
                               recall=not no_recall, tool_max_tokens=tool_max_tokens,
                               recall_min_score=recall_min_score, cross_session=cross_session, window=window,
                               protect=protect, keep_tool_results=keep_results, clear_trigger=clear_trigger,
                               clear_at_least=clear_at_least, record=False)
        for note in result.notes:
            out.warn(note)
        rendered = result.formatted(fmt)
        if fmt == "text":
            out.raw(rendered)
        else:
            out.emit(rendered)
        _record_render(store, out, result, fmt=fmt, budget=budget, query=query)
        return 0


def _record_render(store, out, result, **how) -> None:
    """Every render leaves an anatomy record of what it sent (after it is
    sent: a pack the agent never got is no call). Failing to write one
    never costs the agent its pack."""
    from stores.errors import TraceError
    try:
        store.record_render(result, **how)
    except (OSError, TraceError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        out.warn(f"the render's anatomy record was not written ({why}); the pack above is complete")

