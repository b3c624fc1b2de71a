"""How ingest reads model calls out of Claude Code and Codex transcripts:
one record per call, the usage the call really had, and the events that
were in its context (its own thread's, before its output)."""
from __future__ import annotations

import json
from pathlib import Path

from stores.anatomy.log import AnatomyLog
from stores.store import Store
from tests.helpers import cli

S = "11111111-2222-4333-8444-555555555555"


def _cc(kind: str, n: int, message: dict | None = None, **extra) -> dict:
    line = {"type": kind, "sessionId": S, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None,
            "timestamp": f"2026-02-01T10:00:{n:02d}.000Z", **extra}
    if message is not None:
        line["message"] = message
    return line


def _assistant(n: int, mid: str, content: list, usage: dict, model: str = "claude-sonnet-4-5-20250929", **extra):
    return _cc("assistant", n, {"id": mid, "role": "assistant", "model": model, "content": content, "usage": usage},
               **extra)


def _usage(read: int, output: int = 5) -> dict:
    return {"input_tokens": 4, "cache_creation_input_tokens": 100, "cache_read_input_tokens": read, "output_tokens": output}


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return path


def _records(store: Store, session: str) -> list[dict]:
    return AnatomyLog(store.dir).read(session)


def _turn(store: Store, session: str, n: int) -> dict:
    run = cli("--store", str(store.dir), "anatomy", "replay", "--session", session, "--turn", str(n))
    assert run.code == 0, run.err
    return json.loads(run.out)


def test_claude_code_calls_streams_sidechains_and_synthetic_messages(tmp_path):
    lines = [
        _cc("user", 0, {"role": "user", "content": "Why is the nightly export slow?"}),
        # one streamed message on two lines: the last line's usage is the call's
        _assistant(1, "msg_A", [{"type": "text", "text": "Let me look."}], _usage(20_000, output=1), requestId="req_A"),
        _assistant(2, "msg_A", [{"type": "tool_use", "id": "t1", "name": "Task",
                                 "input": {"prompt": "profile the export"}}], _usage(20_000, output=240),
                   requestId="req_A"),
        # a sub-agent's own call: its context is its own thread
        _cc("user", 3, {"role": "user", "content": "profile the export"}, isSidechain=True, agentId="ag1"),
        _assistant(4, "msg_S", [{"type": "text", "text": "Profiling."}], _usage(3_000), isSidechain=True, agentId="ag1"),
        _cc("user", 5, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                      "content": "export spends 80% in gzip"}]}),
        # what the client writes itself is no model call
        _assistant(6, "msg_X", [{"type": "text", "text": "API Error"}], _usage(0), model="<synthetic>"),
        _assistant(7, "msg_B", [{"type": "text", "text": "gzip level 9 is the cost."}], _usage(20_500)),
    ]
    store = Store(tmp_path / "store")
    [res] = list(store.ingest([str(_write(tmp_path / "s.jsonl", lines))], embed=False))
    assert res.anatomy == 3
    by_key = {r["key"]: r for r in _records(store, S)}
    a, side, b = by_key[f"cc/{S}/msg_A"], by_key[f"cc/{S}/msg_S"], by_key[f"cc/{S}/msg_B"]
    assert a["usage"]["outputTokens"] == 240 and a["contextTokens"] == 20_104
    assert a["source"]["requestId"] == "req_A" and a["source"]["line"] == 2
    assert side["context"]["thread"] == "ag1" and side["contextTokens"] == 3_104
    assert f"cc/{S}/msg_X" not in by_key
    rows = cli("--store", str(store.dir), "anatomy", "replay", "--session", S).lines()
    assert [r["thread"] for r in rows] == ["main", "ag1", "main"]
    texts = [e["snippet"] for e in _turn(store, S, 2)["events"]]
    assert texts == ["profile the export"]                        # the sub-agent saw its prompt only
    texts = [e["snippet"] for e in _turn(store, S, 3)["events"]]
    assert texts[0] == "Why is the nightly export slow?" and "profile the export" not in texts
    assert "export spends 80% in gzip" in texts and "gzip level 9 is the cost." not in texts


def test_a_claude_code_compaction_restarts_the_window(tmp_path):
    lines = [
        _cc("user", 0, {"role": "user", "content": "Migrate the schema"}),
        _assistant(1, "msg_1", [{"type": "text", "text": "Working on it."}], _usage(90_000)),
        _cc("system", 2, subtype="compact_boundary", content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 150_000}),
        _cc("user", 3, {"role": "user", "content": "Summary: schema migration half done."}, isCompactSummary=True),
        _assistant(4, "msg_2", [{"type": "text", "text": "Continuing."}], _usage(21_000)),
    ]
    store = Store(tmp_path / "store")
    list(store.ingest([str(_write(tmp_path / "s.jsonl", lines))], embed=False))
    rows = cli("--store", str(store.dir), "anatomy", "replay", "--session", S).lines()
    assert [r["compactionCycle"] for r in rows] == [0, 1] and rows[1]["compacted"]
    after = _turn(store, S, 2)
    assert [e["snippet"] for e in after["events"]] == ["Summary: schema migration half done."]
    assert "150000" in after["record"]["compaction"]["note"]


def test_what_claude_code_keeps_but_never_sends_is_not_in_a_calls_context(tmp_path):
    # A resumed session's file opens with `summary` lines (the titles its resume list shows), and text
    # typed while the agent works is logged as a queue operation before it reaches the model as a
    # user line: neither was in any call's context, so neither is replayed or counted as a slice.
    lines = [
        {"type": "summary", "summary": "Export flake on the 31st", "leafUuid": "l1"},
        {"type": "summary", "summary": "Earlier: cron table audit", "leafUuid": "l2"},
        _cc("user", 1, {"role": "user", "content": "Why does the export fail on the 31st?"}),
        _assistant(2, "msg_1", [{"type": "text", "text": "Checking cron."}], _usage(9_000)),
        {"type": "queue-operation", "operation": "enqueue", "sessionId": S, "content": "and the timezone?",
         "timestamp": "2026-02-01T10:00:03.000Z"},
        _cc("user", 4, {"role": "user", "content": "and the timezone?"}),
        _assistant(5, "msg_2", [{"type": "text", "text": "UTC."}], _usage(9_100)),
    ]
    store = Store(tmp_path / "store")
    list(store.ingest([str(_write(tmp_path / "s.jsonl", lines))], embed=False))
    logged = [e["text"] for e in Store(store.dir).events()]
    assert "Export flake on the 31st" in logged and logged.count("and the timezone?") == 2   # kept, losslessly
    first, second = _turn(store, S, 1), _turn(store, S, 2)
    assert [e["snippet"] for e in first["events"]] == ["Why does the export fail on the 31st?"]
    assert [e["snippet"] for e in second["events"]] == ["Why does the export fail on the 31st?", "Checking cron.",
                                                        "and the timezone?"]
    assert "system" not in first["record"]["slices"]


def test_a_claude_code_session_saved_as_one_document_gives_the_calls_its_lines_give(tmp_path):
    # a JSON array of the records (`claude -p --output-format json --verbose`)
    # or a web session's {"loglines": [...]}: the parser reads each element at
    # its position, and the calls are read from the same elements
    lines = [
        _cc("user", 0, {"role": "user", "content": "Why is the nightly export slow?"}),
        _assistant(1, "msg_A", [{"type": "text", "text": "Let me look."}], _usage(20_000)),
        _cc("user", 2, {"role": "user", "content": "And the weekly one?"}),
        _assistant(3, "msg_B", [{"type": "text", "text": "Same gzip level."}], _usage(20_300)),
    ]
    seen = {}
    for name, body in (("s.jsonl", None), ("array.json", lines), ("web.json", {"loglines": lines})):
        store = Store(tmp_path / name / "store")
        path = tmp_path / name / name
        path.parent.mkdir(exist_ok=True)
        _write(path, lines) if body is None else path.write_text(json.dumps(body, indent=1))
        [res] = list(store.ingest([str(path)], embed=False))
        seen[name] = (res.anatomy, [(r["key"], r["contextTokens"], r["source"]["line"]) for r in _records(store, S)])
    assert seen["s.jsonl"][0] == 2
    assert seen["array.json"] == seen["web.json"] == seen["s.jsonl"]


def _cx(n: int, kind: str, payload: dict) -> dict:
    return {"timestamp": f"2026-02-01T11:00:{n:02d}.000Z", "type": kind, "payload": payload}


def _count(n: int, last: int, total: int, window: int = 272_000) -> dict:
    usage = {"input_tokens": last, "cached_input_tokens": last // 2, "output_tokens": 30, "total_tokens": last + 30}
    return _cx(n, "event_msg", {"type": "token_count", "info": {
        "last_token_usage": usage, "total_token_usage": {**usage, "total_tokens": total},
        "model_context_window": window}})


def test_codex_calls_their_context_and_repeated_reports(tmp_path):
    sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
    lines = [
        _cx(0, "session_meta", {"id": sid, "cwd": "/repo", "cli_version": "0.40.0", "instructions": "Be careful."}),
        _cx(1, "turn_context", {"model": "gpt-5-codex", "cwd": "/repo"}),
        _cx(2, "response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "Run the tests"}]}),
        _cx(3, "response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                 "arguments": "{\"command\":[\"make\",\"test\"]}"}),
        _count(4, 3000, 3030),
        _count(5, 3000, 3030),                                   # the same call reported again
        _cx(6, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "2 failed"}),
        _cx(7, "response_item", {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "Two tests fail."}]}),
        _count(8, 3400, 6460),
    ]
    store = Store(tmp_path / "store")
    [res] = list(store.ingest([str(_write(tmp_path / "r.jsonl", lines))], embed=False))
    assert res.anatomy == 2
    rows = cli("--store", str(store.dir), "anatomy", "replay", "--session", sid).lines()
    assert [r["contextTokens"] for r in rows] == [3000, 3400]
    assert [r["contextUtilPct"] for r in rows] == [round(300000 / 272000, 2), round(340000 / 272000, 2)]
    assert rows[0]["model"] == "gpt-5-codex"
    first, second = _turn(store, sid, 1), _turn(store, sid, 2)
    assert [e["kind"] for e in first["events"]][-1] == "user"            # its own call is its output, not its context
    assert [e["kind"] for e in second["events"]][-2:] == ["tool_call", "tool_result"]


def test_a_codex_compaction_summary_is_in_every_later_calls_context(tmp_path):
    # Codex replaces the compacted turns with its summary, which each later request carries; a
    # compaction that left no summary text is a boundary only
    sid = "0199aaaa-bbbb-7ccc-8ddd-ffffffffffff"
    lines = [
        _cx(0, "session_meta", {"id": sid, "cwd": "/repo", "cli_version": "0.131.0"}),
        _cx(1, "turn_context", {"model": "gpt-5.1-codex", "cwd": "/repo"}),
        _cx(2, "response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "Why is CI red?"}]}),
        _cx(3, "response_item", {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "test_tz fails."}]}),
        _count(4, 3000, 3030),
        _cx(5, "compacted", {"message": "Summary: CI is red because test_tz fails.", "replacement_history": []}),
        _cx(6, "event_msg", {"type": "context_compacted"}),
        _cx(7, "response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "Fix it"}]}),
        _cx(8, "response_item", {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "Pinned TZ."}]}),
        _count(9, 900, 3960),
        _cx(10, "compacted", {"message": ""}),
        _cx(11, "response_item", {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": "Thanks"}]}),
        _cx(12, "response_item", {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "Welcome."}]}),
        _count(13, 500, 4500),
    ]
    store = Store(tmp_path / "store")
    list(store.ingest([str(_write(tmp_path / "r.jsonl", lines))], embed=False))
    rows = cli("--store", str(store.dir), "anatomy", "replay", "--session", sid).lines()
    assert [r["compactionCycle"] for r in rows] == [0, 1, 2]
    assert [e["snippet"] for e in _turn(store, sid, 2)["events"]] == ["Summary: CI is red because test_tz fails.",
                                                                      "Fix it"]
    assert [e["snippet"] for e in _turn(store, sid, 3)["events"]] == ["Thanks"]


def test_records_at_ingest_can_be_turned_off(tmp_path, monkeypatch):
    lines = [_cc("user", 0, {"role": "user", "content": "hello"}),
             _assistant(1, "msg_1", [{"type": "text", "text": "hi"}], _usage(1000))]
    monkeypatch.setenv("TRACE_ANATOMY_INGEST", "off")
    store = Store(tmp_path / "store")
    [res] = list(store.ingest([str(_write(tmp_path / "s.jsonl", lines))], embed=False))
    assert res.added == 2 and res.anatomy == 0 and not (store.dir / "anatomy").exists()


def test_sub_agents_without_agent_ids_each_have_their_own_context(tmp_path):
    """Older Claude Code writes sidechain lines without an agentId: each
    sub-agent is told apart by the turn its prompt opened."""
    def side(kind, n, message, parent):
        line = _cc(kind, n, message, isSidechain=True)
        line["parentUuid"] = parent
        return line
    lines = [
        _cc("user", 0, {"role": "user", "content": "Audit the two services"}),
        side("user", 1, {"role": "user", "content": "audit the billing service"}, None),
        side("assistant", 2, {"id": "msg_B", "role": "assistant", "model": "claude-sonnet-4-20250514",
                              "content": [{"type": "text", "text": "Billing looks fine."}], "usage": _usage(5_000)}, "u1"),
        side("user", 3, {"role": "user", "content": "audit the search service"}, None),
        side("assistant", 4, {"id": "msg_S", "role": "assistant", "model": "claude-sonnet-4-20250514",
                              "content": [{"type": "text", "text": "Search leaks memory."}], "usage": _usage(4_000)}, "u3"),
    ]
    store = Store(tmp_path / "store")
    list(store.ingest([str(_write(tmp_path / "s.jsonl", lines))], embed=False))
    rows = cli("--store", str(store.dir), "anatomy", "replay", "--session", S).lines()
    assert len({r["thread"] for r in rows}) == 2 and all(r["thread"].startswith("side:") for r in rows)
    assert [e["snippet"] for e in _turn(store, S, 1)["events"]] == ["audit the billing service"]
    assert [e["snippet"] for e in _turn(store, S, 2)["events"]] == ["audit the search service"]
