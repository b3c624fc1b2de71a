"""The anthropic format: Messages API request bodies and message lists
become drafts; content blocks map to text, thinking, tool calls and tool
results without losing one."""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import pytest

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, openai

FOLDERS = ("anthropic_messages", "openai_chat", "claude_code", "codex")
REAL_FILE = "pydantic_ai_cassettes_anthropic_dev.jsonl"


# ---------------------------------------------------------------- helpers

def records(path: Path) -> list[tuple[int, object]]:
    """What the shell hands a parser: a .json file is one document, anything
    else one JSON value per non-blank line (undecodable lines never arrive)."""
    if path.suffix == ".json":
        return [(1, json.loads(path.read_text()))]
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError:
                pass            # the shell reports these; parsers never see them
    return out


def parse(recs, session: str | None = None, source_id: str = "/data/messages.jsonl"):
    out = list(anthropic.parse(recs, ParseContext(path=source_id, source_id=source_id, session=session)))
    return [d for d in out if isinstance(d, Draft)], [b for b in out if isinstance(b, BadRecord)]


def lines(*values) -> list[tuple[int, object]]:
    return list(enumerate(values, 1))


def source_blocks(recs, btype: str) -> list[dict]:
    """Every block of one type, in file order, responses included."""
    out = []
    for _, body in recs:
        msgs = list(body["messages"]) + ([body["response"]] if isinstance(body.get("response"), dict) else [])
        for m in msgs:
            out.extend(b for b in m["content"] if isinstance(m["content"], list) and b["type"] == btype)
    return out


@pytest.fixture(params=[REAL_FILE, "request.json"])
def messages_file(request, samples) -> Path:
    if request.param == "request.json":
        return samples / "anthropic" / request.param
    # only the real files need ../shared: the sample runs without it
    return request.getfixturevalue("shared_transcripts") / "anthropic_messages" / request.param


# ---------------------------------------------------------------- real transcripts

def test_every_tool_use_block_becomes_one_tool_call_draft(messages_file):
    recs = records(messages_file)
    drafts, bad = parse(recs)
    assert not bad
    expected = [(b["name"], b["id"], b["input"]) for b in source_blocks(recs, "tool_use")]
    got = [(d.tool["name"], d.tool["call_id"], d.tool["input"]) for d in drafts if d.kind == "tool_call"]
    assert got == expected and got


def test_every_tool_result_block_becomes_one_tool_result_draft(messages_file):
    recs = records(messages_file)
    drafts, _ = parse(recs)
    blocks = source_blocks(recs, "tool_result")
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [(d.tool["call_id"], d.tool["is_error"]) for d in results] == [
        (b["tool_use_id"], b.get("is_error", False)) for b in blocks]
    for d, b in zip(results, blocks):
        if isinstance(b["content"], str):
            assert d.text == b["content"]
        for inner in b["content"] if isinstance(b["content"], list) else []:
            if inner["type"] == "text":
                assert inner["text"] in d.text
            if inner["type"] == "tool_reference":
                assert f"[tool_reference: {inner['tool_name']}]" in d.text


def test_every_result_pairs_with_the_latest_earlier_call_of_its_id_in_the_same_session(messages_file):
    drafts, _ = parse(records(messages_file))
    latest: dict[tuple[str, str], Draft] = {}
    results = 0
    for d in drafts:
        if d.kind == "tool_call":
            latest[(d.session_id, d.tool["call_id"])] = d
        elif d.kind == "tool_result":
            results += 1
            call = latest[(d.session_id, d.tool["call_id"])]
            assert d.tool["name"] == call.tool["name"] and d.turn_id == call.turn_id
    assert results


def test_every_user_text_block_appears_verbatim(messages_file):
    recs = records(messages_file)
    drafts, _ = parse(recs)
    user_texts = [d.text for d in drafts if d.kind == "user"]
    for _, body in recs:
        for m in body["messages"]:
            if m["role"] != "user":
                continue
            if isinstance(m["content"], str):
                assert m["content"] in user_texts
            else:
                for b in m["content"]:
                    if b["type"] == "text":
                        assert any(b["text"] in t for t in user_texts)


def test_keys_are_unique_and_parsing_is_deterministic(messages_file):
    recs = records(messages_file)
    first, _ = parse(recs)
    again, _ = parse(recs)
    keys = [d.key for d in first]
    assert len(keys) == len(set(keys))
    assert [asdict(d) for d in first] == [asdict(d) for d in again]


def test_each_request_body_is_its_own_session_opened_by_its_system_prompt(messages_file):
    recs = records(messages_file)
    drafts, _ = parse(recs)
    assert len({d.session_id for d in drafts}) == len(recs)
    for line, body in recs:
        mine = [d for d in drafts if d.line == line]
        if body.get("system"):
            assert mine[0].kind == "system" and mine[0].key.endswith("/system/0")


def test_a_response_is_the_final_assistant_event_of_its_body(messages_file):
    recs = records(messages_file)
    drafts, _ = parse(recs)
    for line, body in recs:
        mine = [d for d in drafts if d.line == line]
        if body.get("response") is None:
            assert not any("/response/" in d.key for d in mine)
            continue
        assert "/response/" in mine[-1].key and mine[-1].kind == "assistant"
        assert mine[-1].text == body["response"]["content"][-1]["text"]


def test_counts_on_the_real_transcript(shared_transcripts):
    """Users, calls, results and paired results (checked by hand); a user
    message holding only tool results does not start a turn."""
    drafts, _ = parse(records(shared_transcripts / "anthropic_messages" / REAL_FILE))
    kinds = Counter(d.kind for d in drafts)
    calls = {(d.session_id, d.tool["call_id"]) for d in drafts if d.kind == "tool_call"}
    paired = sum(1 for d in drafts if d.kind == "tool_result" and (d.session_id, d.tool["call_id"]) in calls)
    assert (kinds["user"], kinds["tool_call"], kinds["tool_result"], paired) == (9, 23, 23, 23)
    assert kinds["system"] == 9                     # 8 system prompts + 1 mid-conversation system message
    assert len({d.turn_id for d in drafts if d.kind != "system"}) == 9


def test_a_mid_conversation_system_message_is_a_system_draft(shared_transcripts):
    drafts, _ = parse(records(shared_transcripts / "anthropic_messages" / REAL_FILE))
    assert "[tool_addition: lookup_refund_policy]" in [d.text for d in drafts if d.kind == "system"]


# ---------------------------------------------------------------- sniff

def _samples(path: Path) -> list:
    return [r for _, r in records(path)[:20]]


@pytest.mark.parametrize("folder", FOLDERS)
def test_sniff_claims_anthropic_messages_files_and_nothing_else(shared_transcripts, folder):
    files = sorted(p for p in (shared_transcripts / folder).iterdir() if p.suffix in (".json", ".jsonl"))
    assert files
    for path in files:
        assert anthropic.sniff(_samples(path)) is (folder == "anthropic_messages"), path.name


def test_sniff_claims_data_with_anthropic_markers():
    tool_use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "x"}]}
    assert anthropic.sniff([{"messages": [{"role": "user", "content": "ls"}, tool_use, result]}])
    assert anthropic.sniff([[{"role": "user", "content": "ls"}, tool_use]])               # bare message list
    assert anthropic.sniff([{"role": "user", "content": "ls"}, tool_use, result])           # JSONL of messages
    assert anthropic.sniff([{"messages": [thinking]}])


def test_sniff_claims_a_top_level_system_beside_plain_messages():
    assert anthropic.sniff([{"model": "claude", "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}])
    assert anthropic.sniff([{"system": [{"type": "text", "text": "Be brief."}], "messages": [{"role": "user", "content": "hi"}]}])


def test_sniff_leaves_role_based_openai_data_alone():
    plain = {"role": "user", "content": "hi"}
    for samples in (
        [plain, {"role": "assistant", "content": "hello"}],                  # could be either: openai's
        [{"messages": [plain]}],
        [{"system": None, "messages": [plain]}],                             # a null system is no marker
        [{"system": "s", "messages": [{"role": "system", "content": "s"}, plain]}],
        [{"system": "s", "messages": [plain, {"role": "tool", "tool_call_id": "c", "content": "x"}]}],
        [{"messages": [{"role": "assistant", "content": None, "tool_calls": []},
                       {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]}],
    ):
        assert not anthropic.sniff(samples), samples


def test_sniff_refuses_claude_code_codex_and_trace_lines_even_with_blocks():
    blocks = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]
    cc_line = {"type": "assistant", "sessionId": "s1", "uuid": "u1", "message": {"role": "assistant", "content": blocks}}
    codex_line = {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": blocks}}
    trace_event = {"id": "01H", "seq": 1, "hash": "h", "kind": "assistant", "role": "assistant", "content": blocks}
    for samples in ([cc_line], [codex_line], [trace_event], [{"silly": "this"}], [42], ["text"], [[1]], []):
        assert not anthropic.sniff(samples), samples


# ---------------------------------------------------------------- shapes

def test_a_bare_message_list_is_one_conversation():
    drafts, bad = parse(lines([
        {"role": "user", "content": "What is in /tmp?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                          {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "/tmp"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt\nb.txt"}]},
        {"role": "assistant", "content": "Two files."},
    ]))
    assert not bad
    assert [(d.kind, d.text) for d in drafts] == [
        ("user", "What is in /tmp?"), ("assistant", "Let me look."), ("tool_call", 'ls {"path":"/tmp"}'),
        ("tool_result", "a.txt\nb.txt"), ("assistant", "Two files.")]
    assert drafts[2].tool == {"name": "ls", "call_id": "t1", "input": {"path": "/tmp"}}
    assert drafts[3].tool == {"name": "ls", "call_id": "t1", "is_error": False}
    assert len({d.turn_id for d in drafts}) == 1 and len({d.session_id for d in drafts}) == 1


def test_jsonl_of_single_messages_is_one_conversation():
    drafts, _ = parse(lines(
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "1"}]},
        {"role": "user", "content": "two"},
    ))
    sid = drafts[0].session_id
    assert {d.session_id for d in drafts} == {sid}
    assert [_turn(d) for d in drafts] == [f"{sid}/c0/t1", f"{sid}/c0/t1", f"{sid}/c0/t2"]
    assert [d.line for d in drafts] == [1, 2, 3]


def test_tool_result_only_user_messages_do_not_start_a_turn_but_user_text_does():
    drafts, _ = parse(lines([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"},
                                     {"type": "text", "text": "and now stop"}]},
    ]))
    turns = {d.kind + ":" + d.text: _turn(d).rsplit("/", 1)[1] for d in drafts}
    assert turns == {"user:go": "t1", 'tool_call:run {}': "t1", "tool_result:done": "t1", "user:and now stop": "t2"}


def test_adjacent_text_blocks_of_one_message_join_with_a_blank_line():
    drafts, _ = parse(lines([{"role": "assistant", "content": [
        {"type": "text", "text": "First."}, {"type": "text", "text": "Second."},
        {"type": "tool_use", "id": "t", "name": "n", "input": {}},
        {"type": "text", "text": "After the call."}]}]))
    assert [d.text for d in drafts] == ["First.\n\nSecond.", "n {}", "After the call."]


def test_thinking_blocks_become_wrapped_assistant_drafts():
    drafts, _ = parse(lines([{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Check the cache first.", "signature": "sig"},
        {"type": "redacted_thinking", "data": "EncryptedBlob=="},
        {"type": "text", "text": "Cache is warm."}]}]))
    assert [(d.kind, d.text, d.meta) for d in drafts] == [
        ("assistant", "<thinking>\nCheck the cache first.\n</thinking>", {"thinking": True}),
        ("assistant", "<thinking>\n[redacted]\n</thinking>", {"thinking": True, "redacted": True}),
        ("assistant", "Cache is warm.", None)]
    assert "EncryptedBlob" not in "".join(d.text for d in drafts)


def test_tool_results_keep_is_error_and_flatten_their_blocks():
    drafts, _ = parse(lines([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "is_error": True, "content": [{"type": "text", "text": "boom"}]},
        {"type": "tool_result", "tool_use_id": "b", "content": [
            {"type": "text", "text": "see chart"}, {"type": "image", "source": {"type": "base64", "data": "iVBOR"}}]},
        {"type": "tool_result", "tool_use_id": "c", "content": [{"type": "tool_reference", "tool_name": "get_rate"}]},
    ]}]))
    assert [(d.text, d.tool["is_error"]) for d in drafts] == [
        ("boom", True), ("see chart\n[image]", False), ("[tool_reference: get_rate]", False)]
    assert all(d.tool["name"] is None for d in drafts)          # their calls are not in this file: kept anyway


def test_server_tool_use_and_web_search_results_map_to_tool_drafts():
    drafts, _ = parse(lines([{"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srv1", "name": "web_search", "input": {"query": "tide tables"}},
        {"type": "web_search_tool_result", "tool_use_id": "srv1", "content": [
            {"type": "web_search_result", "title": "Tides", "url": "https://tides.example.com", "encrypted_content": "zzz"}]},
        {"type": "web_search_tool_result", "tool_use_id": "srv1",
         "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
    ]}]))
    call, hit, miss = drafts
    assert call.kind == "tool_call" and call.tool["name"] == "web_search" and call.meta == {"block": "server_tool_use"}
    assert hit.kind == "tool_result" and hit.text == "Tides <https://tides.example.com>" and hit.tool["name"] == "web_search"
    assert miss.tool["is_error"] is True and miss.text == "error: max_uses_exceeded"


def test_images_and_documents_in_user_messages_become_placeholders():
    drafts, _ = parse(lines([{"role": "user", "content": [
        {"type": "text", "text": "Summarise this:"},
        {"type": "document", "title": "Q3 report", "source": {"type": "base64", "data": "JVBERi0x"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}]}]))
    assert [d.text for d in drafts] == ["Summarise this:\n\n[document: Q3 report]\n\n[image]"]


def test_user_text_is_verbatim():
    drafts, _ = parse(lines({"role": "user", "content": "\n  indented question  \n"}))
    assert drafts[0].text == "\n  indented question  \n"


def test_timestamps_and_message_ids_are_kept():
    drafts, _ = parse(lines({"role": "assistant", "id": "msg_01", "created_at": 1714557600,
                             "content": [{"type": "text", "text": "hi"}]}))
    assert (drafts[0].ts, drafts[0].uuid) == ("2024-05-01T10:00:00.000Z", "msg_01")


def test_session_ids_come_from_the_override_then_the_data_then_the_file():
    body = {"system": "s", "messages": [{"role": "user", "content": "hi"}]}
    assert {d.session_id for d in parse(lines(body), session="mine")[0]} == {"mine"}
    assert {d.session_id for d in parse(lines({**body, "session_id": "sess-9"}))[0]} == {"sess-9"}
    a = parse(lines(body), source_id="/data/a.jsonl")[0][0].session_id
    b = parse(lines(body), source_id="/data/b.jsonl")[0][0].session_id
    assert a != b and a.startswith("a-")


def test_bodies_forced_into_one_session_keep_distinct_keys_and_turns():
    body = {"system": "s", "messages": [{"role": "user", "content": "same"}, {"role": "assistant", "content": "same"}]}
    drafts, _ = parse(lines(body, body), session="one")
    assert len({d.key for d in drafts}) == 6 and len({d.turn_id for d in drafts if d.kind == "user"}) == 2


def test_bad_messages_become_bad_records_and_the_rest_still_parses():
    drafts, bad = parse(lines(
        {"messages": [{"role": "user", "content": "ok 1"}, {"role": "tool", "content": "?"}, 7,
                      {"role": "assistant", "content": "ok 2"}], "response": "nope"},
        42, "text", [1], {"silly": "this"},
        {"role": "user", "content": "ok 3"},
    ))
    assert [d.text for d in drafts] == ["ok 1", "ok 2", "ok 3"]
    assert [b.line for b in bad] == [1, 1, 1, 2, 3, 4, 5]
    assert "unknown role 'tool'" in bad[0].reason and "not an object" in bad[1].reason and "response" in bad[2].reason


# ---------------------------------------------------------------- the hand-written sample

def test_the_sample_request_reads_as_one_session_with_its_needle(samples):
    path = samples / "anthropic" / "request.json"
    drafts, bad = parse(records(path))
    assert not bad and len({d.session_id for d in drafts}) == 1
    assert anthropic.sniff(_samples(path)) and not openai.sniff(_samples(path))
    assert drafts[0].kind == "system" and drafts[0].text.count("\n\n") == 1
    assert Counter(d.kind for d in drafts) == Counter(
        {"system": 1, "user": 2, "assistant": 4, "tool_call": 3, "tool_result": 3})
    needle = "sha256:5be1c0a4d0f9e2b7c3a18d46f07e9b21c5a3d8e4f6b7a9c0d1e2f3a4b5c6d7e8"
    assert sum(needle in d.text for d in drafts) == 3
    assert [d.tool["is_error"] for d in drafts if d.kind == "tool_result"] == [False, True, False]
    assert "Yes, it is in build/.\n\nSame file name." in [d.text for d in drafts if d.kind == "user"]


def _turn(d) -> str:
    """A turn id without the digest of the message that opened the turn."""
    return re.sub(r"-[0-9a-f]{10}$", "", d.turn_id)
