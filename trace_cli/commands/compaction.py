"""`trace compact` and `trace context`: the context window as a cache."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt

SessionReq = Annotated[str, typer.Option("--session", "-s", metavar="ID", help="The session.")]
ProtectOpt = Annotated[list[str] | None, typer.Option(
    "--protect", metavar="TOOL", help="Tools whose calls and results are never evicted or cleared "
                                      "(repeatable; default TodoWrite and manage_todo_list).")]


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Evict old spans of a session's context until it fits --budget minus --headroom, leaving "
        "pointer markers (seq and time range, topic hints, a recall directive) — never summaries. "
        "The last --hot-tail turns, system/persona/task state/notes/markers and protected tools "
        "(TodoWrite, manage_todo_list) stay; a tool call never leaves without its result. Every "
        "evicted event stays in the log: `trace recall` or `trace show A..B` brings it back.\n\n"
        "Example:  trace compact --session 4f1c… --budget 4000 --dry-run"))
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
        protect: ProtectOpt = None,
        wait: WaitOpt = 0.0,
        json_out: JsonOpt = False,
    ) -> int:
        from stores.compaction import compact as run
        from trace_cli.app_state import state

        st = state(ctx)
        out = st.output(json_out)
        result = run(st.store(out), session, budget=budget, headroom=headroom, hot_tail=hot_tail,
                     strategy=strategy, dry_run=dry_run, wait=wait, protected=_protected(protect))
        data = result.as_json()
        if out.json:
            out.emit(data)
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
            out.warn("still over budget after evicting everything outside the hot tail; "
                     "lower --hot-tail or raise --budget")
        return 0

    @app.command(help=(
        "The push pack: what the model should see next for a session, never over --budget. Stable "
        "parts first (system/persona, task state, notes, markers in time order), then a "
        "<recalled-context> block for the latest user questions (capped at min(4000, 10% of the "
        "budget)), then the conversation still in the cache. Tool output is middle-truncated, old "
        "results cleared to placeholders, and every call has its result. Each render leaves an anatomy record "
        "of exactly what it sent (`trace anatomy replay`).\n\n"
        "Example:  trace context --session 4f1c… --budget 8000 --format openai"))
    def context(
        ctx: typer.Context,
        session: SessionReq,
        budget: Annotated[int, typer.Option("--budget", min=1, help="Tokens the pack may use.")] = 8000,
        query: Annotated[str | None, typer.Option("--query", "-q", help="Recall for this instead of the last user messages.")] = None,
        fmt: Annotated[str, typer.Option("--format", "-f", metavar="openai|anthropic|text|json")] = "json",
        overflow: Annotated[bool, typer.Option("--overflow", help="The last call hit the context limit: shrink and retry.")] = False,
        no_recall: Annotated[bool, typer.Option("--no-recall", help="Leave out the recalled-context block.")] = False,
        protect: ProtectOpt = None,
        keep_results: Annotated[int, typer.Option("--keep-tool-results", min=0, metavar="K",
                                                  help="Tool results always kept whole (the newest K).")] = 8,
        clear_trigger: Annotated[int, typer.Option("--clear-trigger", min=0, metavar="TOKENS",
                                                   help="Clear old tool results once they hold more than this.")] = 30_000,
        clear_at_least: Annotated[int, typer.Option("--clear-at-least", min=0, metavar="TOKENS",
                                                    help="Once clearing, clear at least this much.")] = 0,
    ) -> int:
        from reducers.pack_formats import PACK_FORMATS, pack_in_format
        from stores.context import push_pack
        from stores.errors import UsageError
        from trace_cli.app_state import state

        if fmt not in PACK_FORMATS:
            raise UsageError(f"unknown --format {fmt!r}; choose one of: openai, anthropic, text, json")
        st = state(ctx)
        out = st.output(True)
        from reducers.retention import Retention
        retention = Retention(trigger_tokens=clear_trigger, keep_last=keep_results, clear_at_least=clear_at_least,
                              excluded_tools=tuple(_protected(protect)))
        pack, cache, info = push_pack(st.store(out), session, budget=budget, query=query, overflow=overflow,
                                      recall=not no_recall, retention=retention)
        rendered = pack_in_format(pack, fmt, session, info)
        if fmt == "text":
            out.raw(rendered)
        else:
            out.emit(rendered)
        _record_render(st.store(out), out, session, pack, cache, info, fmt=fmt, budget=budget, query=query)
        return 0


def _record_render(store, out, session, pack, cache, info, **how) -> None:
    """Every render leaves an anatomy record of what it sent (after it is
    sent: a pack the agent never got is no call). Failing to write one
    never costs the agent its pack."""
    from stores.anatomy.render import record_render
    from stores.errors import TraceError
    try:
        record_render(store, session, pack, cache, info, **how)
    except (OSError, TraceError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        out.warn(f"the render's anatomy record was not written ({why}); the pack above is complete")


def _protected(tools: list[str] | None) -> frozenset[str]:
    import os

    from reducers.evict import PROTECTED_TOOLS
    if tools:
        return frozenset(tools)
    env = os.environ.get("TRACE_PROTECTED_TOOLS")
    return frozenset(t.strip() for t in env.split(",") if t.strip()) if env else frozenset(PROTECTED_TOOLS)
