"""`trace anatomy record`: request bodies in, one A.4 record per call out.

The sizes are checked against values this file works out from the bodies
itself (its own reading of the API shapes, not the decomposer's)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli

CLAUDE_MD = "# Project rules\nAlways run `make test` before committing.\nNever edit vendored files.\n"
SKILL = "<skill>\n<name>pdf-tools</name>\nExtract text from PDFs with pdftotext.\n</skill>"


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def _compact(value) -> int:
    return _utf8(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _texts(content) -> list[str]:
    """The texts of a content value as this test reads the APIs."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content] if content else []
    out = []
    for block in content:
        if isinstance(block, str):
            out.append(block)
        elif isinstance(block.get("text"), str):
            out.append(block["text"])
    return out


def expected(body: dict) -> dict:
    """systemPromptBytes, toolSchemaBytes, messageCount, historyEventCount,
    userMessageBytes of a Chat Completions or Messages body."""
    msgs = body["messages"]
    system = sum(_utf8(t) for t in _texts(body.get("system")))
    system += sum(_utf8(t) for m in msgs if m.get("role") in ("system", "developer") for t in _texts(m.get("content")))
    tools = _compact(body["tools"]) if body.get("tools") else 0
    user = 0
    for m in reversed(msgs):                  # the last user message with text of its own
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            continue
        user = sum(_utf8(t) for t in _texts(content) if True)
        break
    return {"systemPromptBytes": system, "toolSchemaBytes": tools, "messageCount": len(msgs),
            "historyEventCount": sum(1 for m in msgs if m.get("role") not in ("system", "developer")),
            "userMessageBytes": user}


def record(path: Path, session: str = "s1", *extra: str):
    return cli("anatomy", "record", str(path), "--session", session, *extra)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["anthropic_messages/pydantic_ai_cassettes_anthropic_dev.jsonl",
                                  "openai_chat/pydantic_ai_cassettes_chat_completions.jsonl"])
def test_byte_counts_match_the_real_request_bodies(shared_transcripts, tmp_path, name):
    path = shared_transcripts / name
    bodies = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    run = record(path, "real", "--json")
    assert run.code == 0, run.err
    records = run.lines()
    assert len(records) == len(bodies)
    for body, rec in zip(bodies, records):
        want = expected(body)
        got = {k: rec[k] for k in want}
        assert got == want, body["source_path"]
        assert rec["model"] == body["model"]
        assert rec["requestBytes"] == _compact({k: v for k, v in body.items() if k != "response"})
        # the slices split the same bytes: each message's parts and the tool schemas land once
        sliced = sum(s["bytes"] for s in rec["slices"].values())
        assert sliced == sum(m["bytes"] for m in rec["messages"]) + rec["toolSchemaBytes"]


def test_an_anthropic_body_is_taken_apart(tmp_path):
    reminder = f"<system-reminder>\nContents of /repo/CLAUDE.md (project instructions):\n\n{CLAUDE_MD}</system-reminder>"
    tools = [{"name": "bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {
        "cmd": {"type": "string"}}}}]
    body = {"model": "claude-sonnet-4-5-20250929", "system": [{"type": "text", "text": "You are a coding agent."},
                                                              {"type": "text", "text": SKILL}],
            "tools": tools,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": reminder}, {"type": "text", "text": "Fix the build"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "make"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "error: missing ;"}]}],
            "response": {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}],
                         "usage": {"input_tokens": 20, "cache_creation_input_tokens": 100,
                                   "cache_read_input_tokens": 1880, "output_tokens": 5}}}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    run = record(path, "s1", "--json")
    assert run.code == 0, run.err
    [rec] = run.lines()
    workspace = _utf8(f"Contents of /repo/CLAUDE.md (project instructions):\n\n{CLAUDE_MD}")
    assert rec["systemPromptBytes"] == _utf8("You are a coding agent.") + _utf8(SKILL)
    assert rec["skillBytes"] == _utf8(SKILL)
    assert rec["workspaceFileBytes"] == workspace
    assert rec["toolSchemaBytes"] == _compact(tools)
    assert rec["userMessageBytes"] == _utf8(reminder) + _utf8("Fix the build")
    assert rec["slices"]["workspace"]["bytes"] == workspace
    assert rec["slices"]["reminders"]["bytes"] == _utf8(reminder) - workspace
    assert rec["slices"]["user"]["bytes"] == _utf8("Fix the build")
    assert rec["slices"]["system"]["bytes"] == _utf8("You are a coding agent.")
    assert rec["slices"]["tool_results"]["bytes"] == _utf8("error: missing ;")
    assert rec["slices"]["history"]["bytes"] == _utf8('bash{"cmd":"make"}')
    # usage is the real count: cache reads and writes are part of what the call read
    assert rec["contextTokens"] == 2000 and rec["contextTokensSource"] == "usage"
    assert rec["window"] == 200_000 and rec["contextUtilPct"] == 1.0
    assert rec["usage"]["cacheReadTokens"] == 1880
    found = {(f["slice"], f["what"]) for f in rec["recognised"]}
    assert ("workspace", "CLAUDE.md") in found and ("skills", "skill") in found
    assert len(rec["requestHash"]) == 64


def test_openai_chat_and_responses_bodies(tmp_path):
    chat = {"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "developer", "content": "Use tools."},
                         {"role": "user", "content": "What time is it?"},
                         {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "f", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "noon"}]}
    responses = {"model": "gpt-4.1", "instructions": "Answer in French.",
                 "input": [{"role": "user", "content": [{"type": "input_text", "text": "Bonjour"}]},
                           {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": "{\"q\":1}"},
                           {"type": "function_call_output", "call_id": "c2", "output": "trouvé"}]}
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(chat) + "\n" + json.dumps(responses) + "\n")
    run = record(path, "s2", "--json")
    assert run.code == 0, run.err
    a, b = run.lines()
    assert a["api"] == "openai-chat" and a["systemPromptBytes"] == _utf8("Be brief.") + _utf8("Use tools.")
    assert a["messageCount"] == 5 and a["historyEventCount"] == 3 and a["userMessageBytes"] == _utf8("What time is it?")
    assert a["window"] == 128_000 and a["contextTokensSource"] == "estimate"
    assert b["api"] == "openai-responses" and b["systemPromptBytes"] == _utf8("Answer in French.")
    assert b["slices"]["tool_results"]["bytes"] == _utf8("trouvé")
    assert b["slices"]["history"]["bytes"] == _utf8('lookup{"q":1}')
    assert b["window"] == 1_047_576


def test_a_body_without_messages_or_input_is_refused_and_nothing_is_written(tmp_path, trace_home):
    good = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({"model": "gpt-4o", "prompt": "hi"}) + "\n")
    run = record(path)
    assert run.code == 1
    assert f"{path}:2:" in run.err and "messages" in run.err and "input" in run.err and "Accepted" in run.err
    assert len(run.err.strip().splitlines()) == 1
    assert not (trace_home / "anatomy").exists() or not any((trace_home / "anatomy").iterdir())


def test_an_unknown_model_gets_no_utilisation_and_a_warning_and_window_sets_one(tmp_path):
    body = {"model": "acme-mind-7", "messages": [{"role": "user", "content": "hello there"}]}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(body))
    run = record(path, "s3", "--json")
    assert run.code == 0
    [rec] = run.lines()
    assert rec["contextUtilPct"] is None and rec["window"] is None
    assert "acme-mind-7" in run.err and "--window" in run.err
    run = record(path, "s4", "--json", "--window", "1000")
    [rec] = run.lines()
    assert rec["window"] == 1000 and rec["windowSource"] == "option"
    assert rec["contextUtilPct"] == round(100 * rec["contextTokens"] / 1000, 2)


def test_recording_the_same_calls_again_adds_nothing(tmp_path):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps(body) + "\n" + json.dumps(body) + "\n")     # sent twice: two calls
    assert len(record(path, "s5", "--json").lines()) == 2
    again = record(path, "s5", "--json")
    assert again.code == 0 and again.lines() == [] and "2 already recorded" in again.err
    replay = cli("anatomy", "replay", "--session", "s5")
    assert len(replay.lines()) == 2


def test_replaying_a_call_recorded_from_its_body_alone_says_where_its_text_is(tmp_path):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Which port does payroll sync use?"},
                                            {"role": "assistant", "content": "8443"}]}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(body))
    assert record(path, "s6", "--json").code == 0
    turn = cli("anatomy", "replay", "--session", "s6", "--turn", "1", "--json")
    assert turn.code == 0
    [out] = turn.lines()
    assert out["events"] is None
    assert [m["role"] for m in out["record"]["messages"]] == ["user", "assistant"]
    assert "request body alone" in out["note"] and "trace ingest" in out["note"]


def test_stdin_a_json_array_and_logged_calls(tmp_path):
    first = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Plan the release"}]}
    second = {"request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Plan the release"},
                                                          {"role": "assistant", "content": "Step 1"},
                                                          {"role": "user", "content": "Go on"}]},
              "response": {"choices": [{"message": {"role": "assistant", "content": "Step 2"}}],
                           "usage": {"prompt_tokens": 31, "completion_tokens": 3}}}
    telemetry = {"request": {"url": "https://example.com/telemetry", "method": "POST", "body": {}},
                 "response": {"status": 204}}
    run = cli("anatomy", "record", "-", "--session", "s6", "--json",
              stdin=json.dumps([first, second, telemetry]).encode())
    assert run.code == 0, run.err
    a, b = run.lines()
    assert b["contextTokens"] == 31 and b["usage"]["outputTokens"] == 3
    assert a["compactionCycle"] == b["compactionCycle"] == 0          # the history grew: no rewrite
    assert "1 other capture exchange" in run.err


def test_a_rewritten_history_starts_a_new_compaction_cycle(tmp_path):
    turns = [{"role": "user", "content": f"step {i} of the migration"} for i in range(4)]
    calls = [{"model": "gpt-4o", "messages": turns[:2]}, {"model": "gpt-4o", "messages": turns[:3]},
             {"model": "gpt-4o", "messages": [{"role": "user", "content": "summary of steps 0-2"}, turns[3]]},
             {"model": "gpt-4o", "messages": [{"role": "user", "content": "summary of steps 0-2"}, turns[3],
                                              {"role": "user", "content": "and step 4"}]}]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    cycles = [r["compactionCycle"] for r in record(path, "s7", "--json").lines()]
    assert cycles == [0, 0, 1, 1]


def test_missing_session_is_a_usage_error(tmp_path):
    path = tmp_path / "b.json"
    path.write_text("{}")
    assert cli("anatomy", "record", str(path)).code == 2


def test_empty_input_is_called_empty_and_a_bodys_own_time_is_kept_in_utc(tmp_path):
    empty = cli("anatomy", "record", "-", "--session", "s8", stdin=b"")
    assert empty.code == 1 and "empty" in empty.err and "capture traffic" not in empty.err
    body = {"model": "gpt-4o", "created_at": 1767225600, "messages": [{"role": "user", "content": "hello"}]}
    zoned = {"model": "gpt-4o", "timestamp": "2026-01-01T02:00:00+02:00",
             "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
                          {"role": "user", "content": "again"}]}
    run = cli("anatomy", "record", "-", "--session", "s8", "--json",
              stdin=(json.dumps(body) + "\n" + json.dumps(zoned) + "\n").encode())
    assert run.code == 0, run.err
    assert [r["ts"] for r in run.lines()] == ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"]
