"""`trace mcp`: TRACE as Model Context Protocol tools an agent calls itself,
served over stdio with the official `mcp` SDK (imported here only, so no
other command pays for it at start-up).

Every tool is a thin wrapper over the same Python API the CLI uses; a
TraceError comes back as a tool error carrying the CLI's one-line message,
and the server keeps serving. Arguments the schema refuses are reported by
the SDK naming the argument."""
# No `from __future__ import annotations` here: the SDK reads the tools'
# Annotated hints at registration, and some name values local to where the
# tools are defined (the note categories).
import re
from typing import Annotated, Any, Literal

from pydantic import Field

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from trace_cli.mcp_errors import SpecErrors, defined_codes, one_line_logging
from stores.errors import TraceError

SHOW_MAX_CHARS = 20_000
INSTRUCTIONS = (
    "TRACE keeps every event of your past sessions (and other agents') in a lossless log. When your context "
    "shows a marker like '[Events 812–947 … evicted … Use recall(\"docker build ssl\") …]', or you need an "
    "exact string (a path, hash, error text, port, decision) that is not in front of you, call `recall` "
    "before guessing; gate on `score`. Use `show` to read events verbatim (a marker's evicted span, a seq "
    "range, an artifact's full bytes).")

RECALL_HELP = (
    "Search the agent's lossless event log by meaning and by exact string. Call it when (a) your context "
    "holds a TRACE marker saying events were evicted (it names the query to use), (b) you need an exact "
    "string you cannot see — a file path, hash, id, port, error message, command or earlier decision — or "
    "(c) the user refers to something from an earlier session. Returns compact hits: id, seq, session, "
    "kind, time, score with its components (fulltext, vector, recency, task) and a snippet; trust a hit "
    "only if its score clears your bar (or pass min_score). Follow up with `show` for the full events.")
SHOW_HELP = (
    "Read events verbatim from the log: `selector` is a seq ('812'), a range ('812..947') or an event id; "
    "`marker` is a marker's event id (returns what it evicted); `session` alone gives that session's last "
    "`tail` events. `full` replaces artifact previews with the original tool output; long text is cut at "
    "`max_chars`: one event's with `next_offset` to pass as `offset`, several events' with `more.continue_with` "
    "(an event cut there names `truncated_at`: show it alone with that offset).")
CONTEXT_HELP = (
    "The push pack for a session: what the model should see next within `budget` tokens (system and task "
    "state, notes, eviction markers, a recalled-context block for the latest question, the recent turns).")


def _fail(exc: TraceError) -> ToolError:
    from stores.errors import StoreLocked
    retry = ""
    if isinstance(exc, StoreLocked) and exc.waited is not None:    # the CLI's --wait is no option here
        retry = (f" (this server waited {exc.waited:g} s for it); call this tool again in a minute: an ingest or "
                 f"index run holds the store for seconds to minutes, a nightly sweep can take longer")
    return ToolError(f"trace: error: {exc}{retry}")


class StoreThread:
    """Every tool call runs on this one thread, one at a time. The SDK runs
    a plain function on whichever worker thread is free, but the warm
    recaller keeps SQLite connections, which may be used only by the
    thread that opened them: a recall after the store grew (a hook
    ingested) failed with ProgrammingError on another thread."""

    def __init__(self):
        from concurrent.futures import ThreadPoolExecutor
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace-store")

    async def call(self, fn, *args):
        import asyncio
        try:
            return await asyncio.wrap_future(self._pool.submit(fn, *args))
        except TraceError as exc:
            raise _fail(exc) from None


class TraceTools:
    """The tools over one store, whose recaller stays warm across calls
    (Store.recall catches the indexes up with what hooks appended since)."""

    write_wait = 5.0        # seconds a writing tool waits for another writer before it says to call again

    def __init__(self, store):
        self.store = store

    def recall(self, query: str, k: int = 10, session: str | None = None, kinds: list[str] | None = None,
               since: str | None = None, until: str | None = None, hops: int = 1, min_score: float | None = None,
               mode: str = "hybrid", rerank: bool = False) -> dict:
        from stores.recall.query import printed
        result = self.store.recall(query, k=k, session=session, kinds=kinds or None, since=since, until=until,
                                   mode=mode, hops=hops, min_score=min_score, rerank=rerank)
        hits, warnings = result.hits, result.warnings
        out: dict[str, Any] = {"hits": [{"id": h.event_id, "seq": h.seq, "session": h.session_id, "kind": h.kind,
                                         "time": h.ts, "score": printed(h.score), "scores": h.scores,
                                         "hop": h.hop, "snippet": h.snippet, **({"abandoned": True} if h.abandoned else {})}
                         for h in hits]}
        if not hits and min_score is not None:
            out["note"] = f"no hit scored {min_score} or more; try other words, hops=2, or a lower min_score"
        if warnings:
            out["warnings"] = warnings
        return out

    def show(self, selector: str | None = None, marker: str | None = None, session: str | None = None,
             tail: int | None = None, full: bool = False, offset: int = 0, max_chars: int = SHOW_MAX_CHARS) -> dict:
        from reducers.markers import merge_ranges, show_selector
        from stores.log.lookup import full_text, select_events
        events = select_events(self.store, selector, session, marker, tail)
        if len(events) == 1:                     # one event: any long text is read on from `offset`
            event = events[0]
            whole = bool(full and event.get("artifact"))
            text = full_text(self.store, event) if whole else event.get("text", "")
            chunk = text[offset:offset + max_chars]
            end = offset + len(chunk)
            if not whole and offset == 0 and end == len(text):
                return {"events": [event]}
            return {"events": [{**event, "text": chunk, **({"full": True} if whole else {})}], "offset": offset,
                    "total_chars": len(text), "next_offset": end if end < len(text) else None}
        shown, used = [], 0
        for e in events:
            text = full_text(self.store, e) if full and e.get("artifact") else e.get("text", "")
            if shown and used + len(text) > max_chars:
                break
            cut = text[:max_chars - used] if used + len(text) > max_chars else text
            shown.append({**e, "text": cut, **({"full": True} if full and e.get("artifact") else {}),
                          **({"truncated_at": len(cut)} if len(cut) < len(text) else {})})
            used += len(cut)
        out: dict[str, Any] = {"events": shown}
        if len(shown) < len(events):
            rest = events[len(shown):]
            # exactly the events not shown yet: a covering span would also print the seqs between the
            # selected ranges (other sessions', or events a marker did not evict)
            runs = merge_ranges([(e["seq"], e["seq"]) for e in rest])
            out["more"] = {"events_left": len(rest),
                           "continue_with": {"selector": show_selector(runs),
                                             **({"session": rest[0]["session_id"]} if marker or session else {})}}
        return out

    def note_add(self, text: str, category: str, session: str | None) -> dict:
        return self.store.add_note(text, category, session, wait=self.write_wait).to_dict()

    def notes(self, session: str | None, category: str | None, limit: int) -> dict:
        return self.store.notes(session, category=category, limit=limit).to_dict()

    def state(self, session: str) -> dict:
        from stores.errors import NoResult
        try:
            return self.store.state(session).to_dict()
        except NoResult:
            return {"session_id": session, "state": None, "note": "no working state recorded for this session yet"}

    def digest(self, max_lines: int) -> dict:
        from stores.digest import render_store_digest
        found = render_store_digest(self.store, max_lines=max_lines)
        return {"text": found.text, "lines": found.lines, "facts": found.facts, "episodes": found.episodes}

    def context(self, session: str, budget: int = 8000, fmt: str = "text", query: str | None = None):
        return self.store.context(session, budget=budget, query=query, fmt=fmt, record=False).formatted(fmt)


def build_server(store) -> MCPServer:
    tools = TraceTools(store)
    on_store = StoreThread().call
    server = SpecErrors(name="trace", instructions=INSTRUCTIONS, log_level="WARNING")
    one_line_logging()

    @server.tool(description=RECALL_HELP)
    async def recall(
        query: Annotated[str, Field(min_length=1, description="What to look for, in words; exact strings welcome.")],
        k: Annotated[int, Field(ge=1, le=100, description="Hits to return.")] = 10,
        session: Annotated[str | None, Field(description="Only this session.")] = None,
        kinds: Annotated[list[str] | None, Field(description="Only these kinds: user, assistant, tool_call, "
                                                             "tool_result, system, note, task_state, marker…")] = None,
        since: Annotated[str | None, Field(description="ISO time or age (3d, 12h, 30m).")] = None,
        until: Annotated[str | None, Field(description="ISO time or age.")] = None,
        hops: Annotated[int, Field(ge=1, le=2, description="2: also follow identifiers the first hits contain.")] = 1,
        min_score: Annotated[float | None, Field(ge=0, le=1, description=(
            "Drop hits scoring below this (a score is the estimated probability that an answer lies among "
            "the ten hits up to that one, the first ten sharing one score; 0.5: more likely than not)."))] = None,
        mode: Literal["hybrid", "fulltext", "vector"] = "hybrid",
        rerank: Annotated[bool, Field(description=(
            "Reorder the best 50 with a stronger model (slower; needs TRACE's optional 'rerank' extra)."))] = False,
    ) -> dict:
        return await on_store(tools.recall, query, k, session, kinds, since, until, hops, min_score, mode, rerank)

    @server.tool(description=SHOW_HELP)
    async def show(
        selector: Annotated[str | None, Field(description="A seq, a range A..B or an event id.")] = None,
        marker: Annotated[str | None, Field(description="A marker's event id: the events it evicted.")] = None,
        session: Annotated[str | None, Field(description="A session id (with selector: only its events).")] = None,
        tail: Annotated[int | None, Field(ge=1, description="With session alone: only the last N events.")] = None,
        full: Annotated[bool, Field(description="Artifacts' original bytes instead of previews.")] = False,
        offset: Annotated[int, Field(ge=0, description="With one event: where in its text to continue from.")] = 0,
        max_chars: Annotated[int, Field(ge=100, le=200_000, description="Cap on the text returned.")] = SHOW_MAX_CHARS,
    ) -> dict:
        return await on_store(tools.show, selector, marker, session, tail, full, offset, max_chars)

    @server.tool(description=CONTEXT_HELP)
    async def context(
        session: Annotated[str, Field(min_length=1, description="The session id.")],
        budget: Annotated[int, Field(ge=1, description="Tokens the pack may use.")] = 8000,
        format: Literal["text", "json", "openai", "anthropic"] = "text",
        query: Annotated[str | None, Field(description="Recall for this instead of the last user messages.")] = None,
    ) -> Any:
        return await on_store(tools.context, session, budget, format, query)

    _continuity_tools(server, tools, on_store)
    _digest_tool(server, tools, on_store)
    return server


def _continuity_tools(server: MCPServer, tools: TraceTools, on_store) -> None:
    from stores.notes import CATEGORIES

    @server.tool(description=(
        "Remember something explicitly for later sessions (a decision, a preference, a correction, the task, "
        "context). Notes are never evicted or superseded; they come back with `notes` and after compaction."))
    async def note_add(
        text: Annotated[str, Field(min_length=1, description="What to remember, in a sentence or two.")],
        category: Annotated[str, Field(description=f"One of: {', '.join(CATEGORIES)}.")] = "context",
        session: Annotated[str | None, Field(description=(
            "The session it belongs to: an id the store holds (as recall hits name it) or a unique prefix of one; "
            "none: every session."))] = None,
    ) -> dict:
        return await on_store(tools.note_add, text, category, session)

    @server.tool(description="Notes remembered so far, newest first (a session's own and the global ones).")
    async def notes(
        session: Annotated[str | None, Field(description="Only this session's (and global) notes.")] = None,
        category: Annotated[str | None, Field(description=f"Only this category: {', '.join(CATEGORIES)}.")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many.")] = 50,
    ) -> dict:
        return await on_store(tools.notes, session, category, limit)

    @server.tool(description=(
        "A session's working state as TRACE tracked it from the transcript: the current task, open loops, files "
        "touched, recent errors. Read it after a compaction or when resuming work."))
    async def state(session: Annotated[str, Field(min_length=1, description="The session id.")]) -> dict:
        return await on_store(tools.state, session)


def _digest_tool(server: MCPServer, tools: TraceTools, on_store) -> None:
    @server.tool(description=(
        "The store's digest: one line per durable fact the nightly sweep reconciled (with `trace show` pointers) "
        "and recent episodes. Read it at the start of work to know what is already settled."))
    async def digest(max_lines: Annotated[int, Field(ge=5, le=1000, description="At most this many lines.")] = 80) -> dict:
        return await on_store(tools.digest, max_lines)


_ARGUMENT_ERRORS = re.compile(r"Error executing tool (\S+): \d+ validation errors? for \w+\n")
_OUR_ERROR = re.compile(r"Error executing tool \S+: (?=trace: error: )")
_PYDANTIC_DETAIL = re.compile(r" \[type=[^\]]*\]$")


def plain_tool_errors(reply: dict) -> dict:
    """A tool error as the CLI's one line. One refusing the call's arguments
    names each argument and what is wrong with it: the SDK passes on pydantic's report,
    which echoes the input and adds a documentation link per argument
    (tokens the model pays for, and nothing it can act on)."""
    result = reply.get("result")
    content = result.get("content") if isinstance(result, dict) and result.get("isError") else None
    if not (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)):
        return reply
    text = content[0].get("text")
    ours = _OUR_ERROR.match(text) if isinstance(text, str) else None
    if ours is not None:                         # the CLI's own line, without the SDK's prefix
        return {**reply, "result": {**result, "content": [{**content[0], "text": text[ours.end():]}]}}
    found = _ARGUMENT_ERRORS.match(text) if isinstance(text, str) else None
    if found is None:
        return reply
    problems, name = [], None
    for line in text[found.end():].splitlines():
        if not line.startswith(" "):
            name = line.strip()
        elif not line.startswith("    ") and name is not None:
            problems.append(f"`{name}`: {_PYDANTIC_DETAIL.sub('', line.strip())}")
    if not problems:
        return reply
    plain = f"trace: error: bad arguments for {found.group(1)}: " + "; ".join(problems)
    return {**reply, "result": {**result, "content": [{**content[0], "text": plain}]}}


def serve(store) -> None:
    """Serve on stdin/stdout until the client closes the pipe (over
    mcp_wire, which answers bad lines and batches the SDK's stdio drops)."""
    import anyio

    from trace_cli.mcp_wire import serve_stdio
    lowlevel = build_server(store)._lowlevel_server     # what MCPServer.run("stdio") serves
    anyio.run(serve_stdio, lowlevel, lowlevel.create_initialization_options(),
              lambda reply: plain_tool_errors(defined_codes(reply)))
