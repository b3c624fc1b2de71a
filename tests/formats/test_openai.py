"""The openai format: role-based chat messages in every layout people keep
them in (message arrays, JSONL of messages, fine-tuning lines, request
bodies, SWE-agent trajectories) become drafts without losing a message."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import pytest

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, openai
from reducers.formats.registry import detect_format
from tests.conftest import SHARED

FOLDERS = ("openai_chat", "anthropic_messages", "claude_code", "codex")
REAL_FILES = ("tau_bench_airline_dev.jsonl", "pydantic_ai_cassettes_chat_completions.jsonl",
              "sweagent_function_calling_simple.traj.json", "sweagent_marshmallow1867_function_calling.traj.json")


# ---------------------------------------------------------------- helpers

def records(path: Path) -> list[tuple[int, object]]:
    """What the shell hands a parser: a .json file is one document, anything
    else one JSON value per non-blank line (undecodable lines never arrive)."""
    if path.suffix == ".json":
        return [(1, json.loads(path.read_text()))]
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            out.append((n, json.loads(line)))
    return out


def parse(recs, session: str | None = None, source_id: str = "/data/chat.jsonl"):
    out = list(openai.parse(recs, ParseContext(path=source_id, source_id=source_id, session=session)))
    return [d for d in out if isinstance(d, Draft)], [b for b in out if isinstance(b, BadRecord)]


def lines(*values) -> list[tuple[int, object]]:
    return list(enumerate(values, 1))


def conversations(recs) -> list[tuple[dict, list]]:
    """(body, messages) per conversation, read straight from the source."""
    convs, loose = [], []
    for _, rec in recs:
        if isinstance(rec, list):
            convs.append(({}, rec))
        elif "role" in rec:
            loose.append(rec)
        else:
            convs.append((rec, rec.get("messages", rec.get("history"))))
    return convs + ([({}, loose)] if loose else [])


def source_messages(recs) -> list[dict]:
    msgs = []
    for body, conv in conversations(recs):
        msgs.extend(conv)
        response = body.get("response")
        if isinstance(response, dict):
            msgs.append(response["choices"][0]["message"] if "choices" in response else response)
    return msgs


@pytest.fixture(params=[*REAL_FILES, "support-chat.jsonl"])
def chat_file(request, samples) -> Path:
    if request.param == "support-chat.jsonl":
        return samples / "openai" / request.param
    # only the real files need ../shared: the sample runs without it
    return request.getfixturevalue("shared_transcripts") / "openai_chat" / request.param


# ---------------------------------------------------------------- real transcripts

def test_every_tool_call_in_the_source_becomes_one_tool_call_draft(chat_file):
    recs = records(chat_file)
    drafts, bad = parse(recs)
    expected = [(c["function"]["name"], c.get("id")) for m in source_messages(recs) for c in m.get("tool_calls") or []]
    got = [(d.tool["name"], d.tool["call_id"]) for d in drafts if d.kind == "tool_call"]
    assert not bad
    assert got == expected and got


def test_every_tool_message_becomes_one_tool_result_draft_with_the_output_the_model_saw(chat_file):
    recs = records(chat_file)
    drafts, _ = parse(recs)
    tool_msgs = [m for m in source_messages(recs) if m["role"] == "tool"]
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [d.text for d in results] == [m["content"] for m in tool_msgs]
    assert [d.tool["call_id"] for d in results] == [m.get("tool_call_id") or m["tool_call_ids"][0] for m in tool_msgs]


def test_every_result_pairs_with_the_latest_earlier_call_of_its_id_in_the_same_session(chat_file):
    """tau-bench and SWE-agent reuse call ids within one conversation, so a
    result answers the most recent call with its id."""
    drafts, _ = parse(records(chat_file))
    latest: dict[tuple[str, str], Draft] = {}
    results = 0
    for d in drafts:
        if d.kind == "tool_call":
            latest[(d.session_id, d.tool["call_id"])] = d
        elif d.kind == "tool_result":
            results += 1
            call = latest[(d.session_id, d.tool["call_id"])]          # every call in these files exists
            assert d.tool["name"] == call.tool["name"] and d.turn_id == call.turn_id
    assert results


def test_every_user_string_appears_verbatim(chat_file):
    recs = records(chat_file)
    drafts, _ = parse(recs)
    user_texts = [d.text for d in drafts if d.kind == "user"]
    for m in source_messages(recs):
        if m["role"] != "user":
            continue
        if isinstance(m["content"], str):
            assert m["content"] in user_texts
        else:
            for part in m["content"]:
                if part["type"] == "text":
                    assert any(part["text"] in t for t in user_texts)


def test_keys_are_unique_and_parsing_is_deterministic(chat_file):
    recs = records(chat_file)
    first, _ = parse(recs)
    again, _ = parse(recs)
    keys = [d.key for d in first]
    assert len(keys) == len(set(keys))
    assert [asdict(d) for d in first] == [asdict(d) for d in again]


def test_each_conversation_line_is_its_own_session(chat_file):
    recs = records(chat_file)
    drafts, _ = parse(recs)
    by_line = {}
    for d in drafts:
        by_line.setdefault(d.line, set()).add(d.session_id)
    assert all(len(s) == 1 for s in by_line.values())
    assert len({d.session_id for d in drafts}) == len(recs)


def test_counts_on_the_real_transcripts(shared_transcripts):
    """Users, calls, results and paired results per file (the numbers the
    parser was checked against by hand)."""
    expected = {
        "tau_bench_airline_dev.jsonl": (757, 572, 572, 572),
        "pydantic_ai_cassettes_chat_completions.jsonl": (19, 21, 19, 19),
        "sweagent_function_calling_simple.traj.json": (1, 5, 5, 5),
        "sweagent_marshmallow1867_function_calling.traj.json": (1, 11, 11, 11),
    }
    for name, want in expected.items():
        drafts, _ = parse(records(shared_transcripts / "openai_chat" / name))
        kinds = Counter(d.kind for d in drafts)
        calls = {(d.session_id, d.tool["call_id"]) for d in drafts if d.kind == "tool_call"}
        paired = sum(1 for d in drafts if d.kind == "tool_result" and (d.session_id, d.tool["call_id"]) in calls)
        assert (kinds["user"], kinds["tool_call"], kinds["tool_result"], paired) == want, name


def test_a_request_body_response_is_the_final_assistant_event(shared_transcripts):
    recs = records(shared_transcripts / "openai_chat" / "pydantic_ai_cassettes_chat_completions.jsonl")
    drafts, _ = parse(recs)
    for line, body in recs:
        mine = [d for d in drafts if d.line == line]
        response = body.get("response")
        if response is None:
            assert not any("/response/" in d.key for d in mine)
            continue
        tail = [d for d in mine if "/response/" in d.key]
        assert tail and mine[-len(tail):] == tail
        assert all(d.kind in ("assistant", "tool_call") and d.meta["model"] == body["model"] for d in tail)
        if response.get("content"):
            assert response["content"] in [d.text for d in tail]


def test_swe_agent_thoughts_that_repeat_the_content_are_not_doubled(shared_transcripts):
    doc = json.loads((shared_transcripts / "openai_chat" / "sweagent_function_calling_simple.traj.json").read_text())
    drafts, _ = parse([(1, doc)])
    assistants = [m for m in doc["history"] if m["role"] == "assistant"]
    assert [d.text for d in drafts if d.kind == "assistant"] == [m["content"] for m in assistants]
    assert not any((d.meta or {}).get("thinking") for d in drafts)


# ---------------------------------------------------------------- sniff

def _samples(path: Path) -> list:
    return [r for _, r in records(path)[:20]]


@pytest.mark.parametrize("folder", FOLDERS)
def test_sniff_claims_openai_chat_files_and_nothing_else(shared_transcripts, folder):
    files = sorted(p for p in (shared_transcripts / folder).iterdir() if p.suffix in (".json", ".jsonl"))
    assert files
    for path in files:
        assert openai.sniff(_samples(path)) is (folder == "openai_chat"), path.name


@pytest.mark.parametrize("folder", FOLDERS)
def test_openai_and_anthropic_never_both_claim_a_file(shared_transcripts, folder):
    for path in (shared_transcripts / folder).iterdir():
        if path.suffix in (".json", ".jsonl"):
            samples = _samples(path)
            assert not (openai.sniff(samples) and anthropic.sniff(samples)), path.name


def test_sniff_claims_every_openai_shape():
    msg = {"role": "user", "content": "hi"}
    assert openai.sniff([msg, {"role": "assistant", "content": "hello"}])          # JSONL of messages
    assert openai.sniff([[msg]])                                                     # whole-document array
    assert openai.sniff([{"messages": [msg]}])                                       # fine-tuning line
    assert openai.sniff([{"model": "m", "messages": [msg], "tools": []}])             # request body
    assert openai.sniff([{"history": [msg]}])                                        # trajectory
    assert openai.sniff([{"role": "developer", "content": "be brief"}, msg])


def test_sniff_refuses_what_is_not_openai_chat():
    cc_line = {"type": "user", "sessionId": "s1", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    codex_line = {"timestamp": "2025-01-01T00:00:00Z", "type": "response_item",
                  "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}}
    trace_event = {"id": "01H", "seq": 1, "hash": "h", "kind": "user", "role": "user", "content": "hi"}
    anthropic_body = {"system": "s", "messages": [{"role": "user", "content": "hi"}]}
    anthropic_blocks = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]
    for samples in ([cc_line], [codex_line], [trace_event], [anthropic_body], [anthropic_blocks],
                    [{"silly": "this"}], [42], ["text"], [[1]], []):
        assert not openai.sniff(samples), samples


# ---------------------------------------------------------------- shapes

def test_a_whole_document_array_is_one_conversation():
    drafts, bad = parse(lines([
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Where is the lockfile?"},
        {"role": "assistant", "content": "In the repo root."},
    ]))
    assert not bad
    assert [(d.kind, d.text) for d in drafts] == [
        ("system", "Be terse."), ("user", "Where is the lockfile?"), ("assistant", "In the repo root.")]
    assert len({d.session_id for d in drafts}) == 1 and {d.line for d in drafts} == {1}


def test_jsonl_of_single_messages_is_one_conversation_with_turns():
    drafts, _ = parse(lines(
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "two"},
    ))
    assert len({d.session_id for d in drafts}) == 1
    assert [d.line for d in drafts] == [1, 2, 3, 4]
    sid = drafts[0].session_id
    assert [_turn(d) for d in drafts] == [f"{sid}/c0/t1", f"{sid}/c0/t1", f"{sid}/c0/t2", f"{sid}/c0/t2"]


def test_events_before_the_first_user_message_share_turn_zero():
    drafts, _ = parse(lines({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}))
    assert [_turn(d).rsplit("/", 1)[1] for d in drafts] == ["t0", "t1"]


def test_tool_calls_and_results_map_to_tool_drafts_in_the_turn_of_their_user_message():
    drafts, _ = parse(lines({"messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.txt\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "beta"}]},
    ]}))
    kinds = [d.kind for d in drafts]
    assert kinds == ["user", "assistant", "tool_call", "tool_call", "tool_result", "tool_result"]
    c1, c2, r1, r2 = drafts[2:]
    assert c1.tool == {"name": "read", "call_id": "c1", "input": {"path": "a.txt"}}
    assert c1.text == 'read {"path": "a.txt"}'
    assert c2.tool["input"] == "not json"                    # broken arguments are kept, not dropped
    assert r1.tool == {"name": "read", "call_id": "c1", "is_error": False} and r1.text == "alpha"
    assert r2.text == "beta"
    assert len({d.turn_id for d in drafts}) == 1


def test_a_result_whose_call_is_missing_is_still_kept():
    drafts, _ = parse(lines([{"role": "tool", "tool_call_id": "ghost", "content": "orphan output"}]))
    assert [(d.kind, d.text, d.tool) for d in drafts] == [
        ("tool_result", "orphan output", {"name": None, "call_id": "ghost", "is_error": False})]


def test_legacy_function_call_and_role_function():
    drafts, _ = parse(lines([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}},
        {"role": "function", "name": "weather", "content": "rain"},
    ]))
    call, result = drafts[1], drafts[2]
    assert call.kind == "tool_call" and call.tool["name"] == "weather" and call.tool["input"] == {"city": "Oslo"}
    assert result.kind == "tool_result" and result.tool["name"] == "weather" and result.text == "rain"
    assert call.tool["call_id"] and result.tool["call_id"] == call.tool["call_id"]     # paired in order


def test_calls_without_ids_are_answered_in_order():
    # Fine-tuning data often drops the ids: two parallel calls, then their two results.
    drafts, _ = parse(lines([
        {"role": "user", "content": "jobs in New York and remote?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "searchjobs", "arguments": "{\"location\": \"New York\"}"}},
            {"type": "function", "function": {"name": "remote_jobs", "arguments": "{}"}}]},
        {"role": "tool", "content": "{\"results\": [1]}"},
        {"role": "tool", "content": "{\"results\": [2]}"},
    ]))
    calls = [d for d in drafts if d.kind == "tool_call"]
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [r.tool["call_id"] for r in results] == [c.tool["call_id"] for c in calls]
    assert [r.tool["name"] for r in results] == ["searchjobs", "remote_jobs"]
    assert len({c.tool["call_id"] for c in calls}) == 2


def test_a_tau2_bench_results_file_holds_one_conversation_per_simulation():
    sim = {"id": "sim-1", "task_id": "7", "messages": [
        {"role": "assistant", "content": "Hi! How can I help?", "tool_calls": None, "turn_idx": 0},
        {"role": "user", "content": "Look me up: Fatima Johnson", "turn_idx": 1},
        {"role": "assistant", "content": None, "turn_idx": 2,
         "tool_calls": [{"id": "toolu_1", "name": "find_user", "arguments": {"name": "Fatima Johnson"}}],
         "raw_data": {"thinking_blocks": [{"type": "thinking", "thinking": "Find the user first."}]}},
        {"id": "toolu_1", "role": "tool", "content": "fatima_7581", "requestor": "assistant", "error": False},
        {"id": "toolu_2", "role": "tool", "content": "no such order", "requestor": "assistant", "error": True},
    ]}
    items = list(openai.parse([(1, {"timestamp": "2025-10-31", "info": {}, "tasks": [], "simulations": [sim, sim]})],
                              ParseContext(path="r.json", source_id="/r.json")))
    drafts = [d for d in items if isinstance(d, Draft)]
    assert detect_format([{"timestamp": "x", "simulations": [sim]}]) == "openai"
    assert len({d.session_id for d in drafts}) == 1 and len({d.turn_id.split("/c")[1][0] for d in drafts}) == 2
    first = drafts[:len(drafts) // 2]
    assert [d.kind for d in first] == ["assistant", "user", "assistant", "tool_call", "tool_result", "tool_result"]
    assert first[2].text == "<thinking>\nFind the user first.\n</thinking>"
    assert (first[4].tool["call_id"], first[4].tool["name"], first[4].tool["is_error"]) == ("toolu_1", "find_user", False)
    assert first[5].tool["is_error"] is True


def test_reasoning_becomes_a_separate_thinking_draft():
    drafts, _ = parse(lines([{"role": "assistant", "content": "42", "reasoning_content": "6 times 7"}]))
    assert [(d.text, d.meta) for d in drafts] == [
        ("<thinking>\n6 times 7\n</thinking>", {"thinking": True}), ("42", None)]


def test_system_and_developer_become_system_drafts():
    drafts, _ = parse(lines([{"role": "system", "content": "A"}, {"role": "developer", "content": "B"}]))
    assert [(d.kind, d.text) for d in drafts] == [("system", "A"), ("system", "B")]
    assert drafts[1].meta == {"role": "developer"}


def test_content_parts_are_flattened_with_placeholders_for_media():
    drafts, _ = parse(lines([{"role": "user", "content": [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"filename": "q3.pdf", "file_data": "data:application/pdf;base64,JVBE"}},
    ]}]))
    assert drafts[0].text == "What is in these?\n[image]\n[audio]\n[document: q3.pdf]"
    assert "base64" not in drafts[0].text


def test_user_text_is_verbatim_even_with_surrounding_whitespace():
    drafts, _ = parse(lines({"role": "user", "content": "  spaced out \n"}))
    assert drafts[0].text == "  spaced out \n"


def test_a_message_name_goes_to_meta_and_a_timestamp_to_ts():
    drafts, _ = parse(lines({"role": "user", "name": "dana", "content": "hi", "timestamp": "2024-05-01T10:00:00+02:00"}))
    assert drafts[0].meta == {"name": "dana"} and drafts[0].ts == "2024-05-01T08:00:00.000Z"


def test_swe_agent_tool_call_ids_use_the_first_id_and_keep_the_rest():
    drafts, _ = parse(lines({"history": [
        {"role": "assistant", "content": "x", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "content": "ok", "tool_call_ids": ["a", "b"], "message_type": "observation"},
    ]}))
    result = drafts[-1]
    assert result.tool == {"name": "bash", "call_id": "a", "is_error": False}
    assert result.meta == {"message_type": "observation", "tool_call_ids": ["b"]}


def test_a_chat_completion_response_contributes_its_first_choice():
    drafts, _ = parse(lines({"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}],
                             "response": {"object": "chat.completion", "model": "gpt-x-2024", "created": 1714557600,
                                          "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}]}}))
    last = drafts[-1]
    assert (last.kind, last.text, last.meta, last.ts) == ("assistant", "hello", {"model": "gpt-x-2024"},
                                                          "2024-05-01T10:00:00.000Z")
    assert last.key.endswith("/response/0")


def test_a_top_level_system_beside_messages_is_a_system_draft():
    drafts, _ = parse(lines({"system": "Answer in French.", "messages": [{"role": "user", "content": "hi"}]}))
    assert [(d.kind, d.text) for d in drafts] == [("system", "Answer in French."), ("user", "hi")]


def test_session_ids_come_from_the_override_then_the_data_then_the_file():
    body = {"messages": [{"role": "user", "content": "hi"}]}
    assert {d.session_id for d in parse(lines(body), session="mine")[0]} == {"mine"}
    assert {d.session_id for d in parse(lines({**body, "conversation_id": "conv-7"}))[0]} == {"conv-7"}
    a = parse(lines(body), source_id="/data/a.jsonl")[0][0].session_id
    b = parse(lines(body), source_id="/data/b.jsonl")[0][0].session_id
    assert a != b and a.startswith("a-")


def test_conversations_forced_into_one_session_keep_distinct_keys_and_turns():
    body = {"messages": [{"role": "user", "content": "same words"}, {"role": "assistant", "content": "same reply"}]}
    drafts, _ = parse(lines(body, body, body), session="one")
    assert len({d.key for d in drafts}) == 6
    assert len({d.turn_id for d in drafts}) == 3


def test_bad_messages_become_bad_records_and_the_rest_still_parses():
    drafts, bad = parse(lines(
        {"messages": [{"role": "user", "content": "ok 1"}, {"role": "wizard", "content": "?"}, "not a message",
                      {"role": "assistant", "content": "ok 2"}]},
        42, "text", [1], {"silly": "this"}, [],
        {"role": "user", "content": "ok 3"},
    ))
    assert [d.text for d in drafts] == ["ok 1", "ok 2", "ok 3"]
    assert [b.line for b in bad] == [1, 1, 2, 3, 4, 5, 6]
    assert "unknown role 'wizard'" in bad[0].reason and "not an object" in bad[1].reason


# ---------------------------------------------------------------- the hand-written sample

def test_the_sample_support_chat_holds_two_conversations_and_its_needles(samples):
    drafts, bad = parse(records(samples / "openai" / "support-chat.jsonl"))
    assert not bad and len({d.session_id for d in drafts}) == 2
    text = "\n".join(d.text for d in drafts)
    assert "ops-oncall@example.org" in text and "INC-20931" in text
    assert Counter(d.kind for d in drafts) == Counter(
        {"assistant": 5, "tool_call": 4, "tool_result": 4, "user": 4, "system": 2})
    assert openai.sniff(_samples(samples / "openai" / "support-chat.jsonl"))


# ---------------------------------------------------------------- LoCoMo

def test_locomo_sessions_ingest_as_openai_one_draft_per_turn(tmp_path):
    data = SHARED / "data" / "locomo-dev" / "locomo-dev.json"
    tool = SHARED / "tools" / "locomo_to_chat.py"
    if not (data.is_file() and tool.is_file()):
        pytest.skip(f"LoCoMo data or converter not found under {SHARED}")
    subprocess.run([sys.executable, str(tool), str(data), str(tmp_path)], check=True)
    recs = records(tmp_path / "sessions.jsonl")
    assert recs and openai.sniff([r for _, r in recs[:20]]) and not anthropic.sniff([r for _, r in recs[:20]])
    drafts, bad = parse(recs)
    assert not bad
    by_line: dict[int, list[Draft]] = {}
    for d in drafts:
        by_line.setdefault(d.line, []).append(d)
    for line, rec in recs:
        got = by_line[line]
        assert [(d.kind, d.text) for d in got] == [(m["role"], m["content"]) for m in rec["messages"]]
        assert all(": " in d.text for d in got)      # "Speaker: words", verbatim
    assert len({d.session_id for d in drafts}) == len(recs)


def _turn(d) -> str:
    """A turn id without the digest of the message that opened the turn."""
    return re.sub(r"-[0-9a-f]{10}$", "", d.turn_id)
