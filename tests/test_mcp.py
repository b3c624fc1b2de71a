"""`trace mcp` driven end to end by the official MCP client library, the
server a real subprocess: the tools are listed, recall finds needles with
scores, show returns a marker's evicted events verbatim, and a bad call
is an error naming the argument while the server keeps serving."""
from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from stores.store import Store
from tests.helpers import cli, openai_conversations

TRACE = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "trace"


@pytest.fixture
def needle_store(tmp_path) -> tuple[Path, str]:
    store_dir = tmp_path / "store"
    src = openai_conversations(tmp_path / "chats.jsonl", conversations=1, turns=30, prefix="vault")
    assert cli("--store", str(store_dir), "ingest", "--no-embed", str(src)).code == 0
    session = next(Store(store_dir).events())["session_id"]
    run = cli("--store", str(store_dir), "compact", "--session", session, "--budget", "400", "--hot-tail", "1")
    assert run.code == 0, run.err
    return store_dir, session


async def _session(store_dir: Path, body):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    # the SDK starts servers with a few safe variables only: hand on PYTHONPATH when a run sets it
    extra = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    params = StdioServerParameters(command=str(TRACE), args=["--store", str(store_dir), "mcp"], env=extra or None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


def _json(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_client_lists_the_tools_with_a_recall_description_that_says_when_to_call_it(needle_store):
    async def body(s):
        return (await s.list_tools()).tools
    tools = {t.name: t for t in anyio.run(_session, needle_store[0], body)}
    assert {"recall", "show", "context"} <= set(tools)
    assert "marker" in tools["recall"].description and "exact string" in tools["recall"].description
    assert set(tools["recall"].input_schema["properties"]) >= {"query", "k", "session", "kinds", "since", "until",
                                                              "hops", "min_score"}


def test_recall_returns_the_needles_with_scores_and_show_returns_a_markers_events_verbatim(needle_store):
    store_dir, session = needle_store
    marker = next(e for e in Store(store_dir).events() if e["kind"] == "marker")

    async def body(s):
        hits = _json(await s.call_tool("recall", {"query": "where is config_0_4.yaml", "k": 5}))
        gated = _json(await s.call_tool("recall", {"query": "where is config_0_4.yaml", "min_score": 0.99}))
        shown = _json(await s.call_tool("show", {"marker": marker["id"]}))
        return hits, gated, shown
    hits, gated, shown = anyio.run(_session, store_dir, body)
    top = hits["hits"][0]
    assert set(top) >= {"id", "seq", "session", "kind", "time", "score", "scores", "snippet"}
    assert set(top["scores"]) >= {"fulltext", "vector", "recency", "task"}
    assert any("/srv/vault/0/4" in h["snippet"] or "config_0_4.yaml" in h["snippet"] for h in hits["hits"][:3])
    assert all(h["score"] >= 0.99 for h in gated["hits"]) and ("note" in gated or gated["hits"])
    logged = {e["seq"]: e for e in Store(store_dir).events()}
    assert shown["events"], "a marker evicts events"
    for e in shown["events"]:
        assert e == logged[e["seq"]]               # verbatim: every field as logged


def test_bad_arguments_are_an_error_naming_the_argument_and_the_server_keeps_serving(needle_store):
    async def body(s):
        bad_k = await s.call_tool("recall", {"query": "config", "k": 0})
        bad_kind = await s.call_tool("recall", {"query": "config", "kinds": ["nonsense"]})
        missing = await s.call_tool("show", {"selector": "999999"})
        malformed = await s.call_tool("show", {"selector": "12..3"})
        after = await s.call_tool("recall", {"query": "config_0_1.yaml", "k": 1})
        return bad_k, bad_kind, missing, malformed, after
    bad_k, bad_kind, missing, malformed, after = anyio.run(_session, needle_store[0], body)
    assert bad_k.is_error and bad_k.content[0].text == ("trace: error: bad arguments for recall: `k`: "
                                                        "Input should be greater than or equal to 1")
    assert bad_kind.is_error and "trace: error: unknown --kind 'nonsense'" in bad_kind.content[0].text
    assert missing.is_error and "trace: error: no event matches 999999" in missing.content[0].text
    assert malformed.is_error and "runs backwards" in malformed.content[0].text
    assert _json(after)["hits"]


def test_show_full_caps_an_artifact_and_says_where_to_continue(tmp_path):
    store_dir = tmp_path / "store"
    big = "\n".join(f"line {i}: checksum {i * 7919:08x}" for i in range(4000))
    events = [{"role": "user", "content": "dump the checksums"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
              {"role": "tool", "tool_call_id": "c1", "content": big}]
    src = tmp_path / "big.jsonl"
    src.write_text(json.dumps({"messages": events}) + "\n")
    assert cli("--store", str(store_dir), "ingest", "--no-embed", str(src)).code == 0
    result_event = next(e for e in Store(store_dir).events() if e.get("artifact"))

    async def body(s):
        first = _json(await s.call_tool("show", {"selector": str(result_event["seq"]), "full": True,
                                                 "max_chars": 5000}))
        parts = [first["events"][0]["text"]]
        nxt = first["next_offset"]
        while nxt is not None:
            more = _json(await s.call_tool("show", {"selector": str(result_event["seq"]), "full": True,
                                                    "max_chars": 50000, "offset": nxt}))
            parts.append(more["events"][0]["text"])
            nxt = more["next_offset"]
        return first, "".join(parts)
    first, whole = anyio.run(_session, store_dir, body)
    assert len(first["events"][0]["text"]) == 5000 and first["total_chars"] == len(big)
    assert whole == big


def test_note_add_then_notes_and_state_through_the_client(needle_store):
    store_dir, session = needle_store

    async def body(s):
        names = {t.name for t in (await s.list_tools()).tools}
        added = _json(await s.call_tool("note_add", {"text": "vault keys rotate on Mondays", "category": "decision",
                                                     "session": session}))
        listed = _json(await s.call_tool("notes", {"session": session}))
        bad = await s.call_tool("note_add", {"text": "x", "category": "nonsense"})
        stray = await s.call_tool("note_add", {"text": "x", "category": "task", "session": session + "-typo"})
        state = _json(await s.call_tool("state", {"session": session}))
        return names, added, listed, bad, stray, state
    names, added, listed, bad, stray, state = anyio.run(_session, store_dir, body)
    assert {"note_add", "notes", "state"} <= names
    assert listed["notes"][0]["id"] == added["id"] and listed["notes"][0]["text"] == "vault keys rotate on Mondays"
    assert bad.is_error and "trace: error: unknown --category 'nonsense'" in bad.content[0].text
    assert stray.is_error and f"unknown session '{session}-typo'" in stray.content[0].text   # no new session made
    assert not [e for e in Store(store_dir).events() if e["session_id"] == session + "-typo"]
    assert state["session_id"] == session


def test_every_tool_is_offered(needle_store):
    async def body(s):
        return {t.name for t in (await s.list_tools()).tools}
    assert anyio.run(_session, needle_store[0], body) == {"recall", "show", "context", "note_add", "notes", "state",
                                                          "digest"}


def test_digest_tool_returns_the_stores_digest(needle_store):
    async def body(s):
        return _json(await s.call_tool("digest", {"max_lines": 20}))
    out = anyio.run(_session, needle_store[0], body)
    assert isinstance(out["text"], str) and out["lines"] <= 20


def test_show_continues_with_exactly_the_selected_events_not_yet_shown(tmp_path):
    from trace_cli.mcp_server import TraceTools
    store_dir = tmp_path / "store"
    src = openai_conversations(tmp_path / "chats.jsonl", conversations=1, turns=30, prefix="vault")
    assert cli("--store", str(store_dir), "ingest", "--no-embed", str(src)).code == 0
    tools = TraceTools(Store(store_dir))
    wanted = [*range(3, 9), *range(40, 46)]              # two ranges with a gap the continuation must skip
    seen, args = [], {"selector": "3..8,40..45", "max_chars": 100}
    while args:
        page = tools.show(**args)
        seen += [e["seq"] for e in page["events"]]
        args = {**page["more"]["continue_with"], "max_chars": 100} if "more" in page else None
    assert seen == wanted


def test_show_reads_one_long_event_on_from_next_offset(tmp_path):
    from trace_cli.mcp_server import TraceTools
    store_dir = tmp_path / "store"
    long_prompt = " ".join(f"requirement {i}: the service must answer within {i} ms" for i in range(600))
    src = tmp_path / "long.jsonl"
    src.write_text(json.dumps({"messages": [{"role": "user", "content": long_prompt},
                                            {"role": "assistant", "content": "noted"}]}) + "\n")
    assert cli("--store", str(store_dir), "ingest", "--no-embed", str(src)).code == 0
    event = next(e for e in Store(store_dir).events() if e["kind"] == "user")
    assert not event.get("artifact") and len(event["text"]) > 20_000
    tools = TraceTools(Store(store_dir))
    parts, offset = [], 0
    while offset is not None:
        page = tools.show(selector=str(event["seq"]), offset=offset, max_chars=20_000)
        parts.append(page["events"][0]["text"])
        offset = page["next_offset"]
    assert "".join(parts) == event["text"]
    assert tools.show(selector=str(event["seq"] + 1))["events"][0]["text"] == "noted"   # short: as logged


def test_tools_keep_working_whichever_thread_the_sdk_calls_them_from(tmp_path):
    # The SDK gives a tool call whichever worker thread is free (and drops one idle for 10 s); the
    # warm recaller's SQLite connections belong to the thread that opened them, and reopening them
    # for a store that grew (a hook ingested) from another thread failed with ProgrammingError.
    import threading
    from trace_cli.mcp_server import build_server
    store_dir = tmp_path / "store"
    server = build_server(Store(store_dir))

    def from_a_new_thread(name: str, args: dict):
        box = {}

        def run():
            try:
                box["result"] = anyio.run(server.call_tool, name, args)
            except Exception as exc:          # a tool error comes back raised
                box["error"] = exc
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        return box

    assert "no TRACE store" in str(from_a_new_thread("recall", {"query": "depot"})["error"])
    for i in range(3):
        batch = openai_conversations(tmp_path / f"b{i}.jsonl", conversations=1, turns=6, prefix=f"depot{i}")
        assert cli("--store", str(store_dir), "ingest", str(batch)).code == 0
        for _ in range(2):
            answer = from_a_new_thread("recall", {"query": f"/srv/depot{i}/0/3", "k": 3})
            assert "error" not in answer, answer["error"]
            assert f"/srv/depot{i}/0/3" in str(answer["result"])


def test_a_tool_on_a_store_another_writer_holds_says_to_call_again_not_to_pass_a_cli_option(needle_store):
    from mcp.server.mcpserver.exceptions import ToolError

    from stores.log.lock import WriterLock
    from trace_cli.mcp_server import StoreThread, TraceTools
    store_dir, session = needle_store
    tools = TraceTools(Store(store_dir))
    tools.write_wait = 0.2
    with WriterLock(store_dir).acquire():
        with pytest.raises(ToolError) as refused:
            anyio.run(StoreThread().call, tools.note_add, "keys rotate on Mondays", "decision", session)
    said = str(refused.value)
    assert said.startswith("trace: error: store ") and "locked" in said
    assert "--wait" not in said and "waited 0.2 s" in said and "call this tool again" in said
    assert anyio.run(StoreThread().call, tools.note_add, "keys rotate on Mondays", "decision", session)["seq"]
