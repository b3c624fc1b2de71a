"""Codex rollouts: calls and outputs paired by call_id, user text once,
harness text as system."""
from __future__ import annotations

import orjson
import pytest

from reducers.formats import codex
from tests.formats.real_files import parse_file, records


def _source(path):
    calls, outputs, users = set(), 0, []
    for _, rec in records(path):
        p = rec.get("payload") or {}
        if rec.get("type") == "response_item" and p.get("type") in ("function_call", "custom_tool_call"):
            calls.add(p["call_id"])
        if rec.get("type") == "response_item" and p.get("type") in ("function_call_output", "custom_tool_call_output"):
            outputs += 1
        if rec.get("type") == "event_msg" and p.get("type") == "user_message":
            users.append(p["message"])
    return calls, outputs, users


def test_every_real_rollout_pairs_calls_and_keeps_user_text_once(shared_transcripts):
    for path in sorted((shared_transcripts / "codex").glob("*.jsonl")):
        drafts, bad = parse_file(codex, path)
        calls, outputs, users = _source(path)
        got_calls = {d.tool["call_id"] for d in drafts if d.kind == "tool_call"}
        results = [d for d in drafts if d.kind == "tool_result"]
        assert calls <= got_calls, path.name
        assert len(results) >= outputs, path.name
        assert all(r.tool["call_id"] in got_calls for r in results if r.tool["call_id"] in calls), path.name
        got_users = [d.text for d in drafts if d.kind == "user"]
        for text in set(users):
            assert got_users.count(text) == users.count(text), (path.name, text[:50])
        keys = [d.key for d in drafts]
        assert len(keys) == len(set(keys)) and not bad, path.name


def test_environment_context_is_system(shared_transcripts):
    drafts, _ = parse_file(codex, shared_transcripts / "codex" / "agentcmd_rollout_2025-09-24T20-12-23_01997ea4.jsonl")
    env = [d for d in drafts if d.text.startswith("<environment_context>")]
    assert env and all(d.kind == "system" for d in env)


def test_sample_rollout(samples):
    drafts, bad = parse_file(codex, samples / "codex" / "rollout-demo.jsonl")
    kinds = [d.kind for d in drafts]
    assert not bad
    assert kinds.count("user") == 1 and kinds.count("system") == 1
    assert kinds.count("tool_call") == kinds.count("tool_result") == 3
    assert sum("Checking listener configuration" in d.text for d in drafts) == 1      # reasoning once
    assert sum("listen_port=48213. The log" in d.text for d in drafts) == 1            # answer once
    port = next(d for d in drafts if d.kind == "tool_result" and "listen_port=48213" in d.text)
    assert port.tool == {"name": "shell", "call_id": "call_demo_port", "is_error": False}
    assert port.meta == {"exit_code": 0}
    assert {d.session_id for d in drafts} == {"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}


def test_only_the_event_stream_still_produces_events(shared_transcripts):
    drafts, _ = parse_file(codex, shared_transcripts / "codex" / "agtrace_codex_parent_with_spawns.jsonl")
    assert [d.kind for d in drafts if d.kind in ("user", "assistant")] == ["user", "assistant", "user", "assistant"]
    assert drafts[0].turn_id != drafts[-1].turn_id


def test_non_records_are_bad_records():
    from reducers.drafts import BadRecord, ParseContext
    out = list(codex.parse([(1, 42), (2, {"type": "response_item"}), (3, {"foo": 1})],
                           ParseContext(path="x", source_id="x")))
    assert [type(o) for o in out] == [BadRecord] * 3 and [o.line for o in out] == [1, 2, 3]


@pytest.mark.parametrize("folder", ["claude_code", "openai_chat", "anthropic_messages"])
def test_sniff_claims_only_codex(shared_transcripts, folder):
    for path in sorted((shared_transcripts / "codex").glob("*.jsonl")):
        assert codex.sniff([r for _, r in records(path)[:20]]), path.name
    for path in sorted((shared_transcripts / folder).glob("*.json*")):
        samples = [r for _, r in records(path)[:20]] if path.suffix == ".jsonl" else [orjson.loads(path.read_bytes())]
        assert not codex.sniff(samples), path.name
