"""Captured API traffic (claude-trace): one line per HTTP exchange, the
request body and the reply, streamed or not. Every call repeats the whole
history, so each message must be read once, and the reply of a streamed
call is put back together from its server-sent events."""
from __future__ import annotations

import orjson

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic
from reducers.formats.http_capture import streamed_message
from reducers.formats.registry import detect_format

SYSTEM = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]


def exchange(messages: list, reply: dict | None = None, raw: str | None = None) -> dict:
    response = {"status": 200, "headers": {}, "body": reply}
    if raw is not None:
        response = {"status": 200, "headers": {}, "body": None, "body_raw": raw}
    return {"request": {"url": "https://api.anthropic.com/v1/messages", "method": "POST", "headers": {},
                        "body": {"model": "claude-x", "system": SYSTEM, "tools": TOOLS, "messages": messages}},
            "response": response, "logged_at": "2026-03-01T10:00:00Z"}


def sse(*events: dict) -> str:
    return "".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n" for e in events)


def parse(*records) -> list[Draft]:
    out = list(anthropic.parse(list(enumerate(records, 1)), ParseContext(path="/t/log.jsonl", source_id="/t/log.jsonl")))
    assert not [b for b in out if isinstance(b, BadRecord)], out
    return [d for d in out if isinstance(d, Draft)]


def streamed_tool_use() -> str:
    return sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                                              "content": [], "stop_reason": None}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Listing "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "files."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "and\": \"ls\"}"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"})


def test_a_streamed_reply_is_rebuilt_from_its_events():
    message = streamed_message(streamed_tool_use())
    assert message["content"] == [{"type": "text", "text": "Listing files."},
                                  {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]
    assert message["stop_reason"] == "tool_use"


def test_captured_calls_are_anthropic_and_each_message_is_read_once():
    ask = {"role": "user", "content": [{"type": "text", "text": "list the files"}]}
    first = exchange([ask], raw=streamed_tool_use())
    said = {"role": "assistant", "content": [{"type": "text", "text": "Listing files."},
                                             {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                              "input": {"command": "ls"}}]}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt",
                                           "cache_control": {"type": "ephemeral"}}]}
    second = exchange([ask, said, answer], reply={"type": "message", "role": "assistant", "model": "claude-x",
                                                  "content": [{"type": "text", "text": "One file: a.txt"}]})
    assert detect_format([first, second]) == "anthropic"
    drafts = parse(first, second)
    assert [(d.kind, d.text) for d in drafts] == [
        ("system", "You are Claude Code."), ("user", "list the files"), ("assistant", "Listing files."),
        ("tool_call", 'Bash {"command":"ls"}'), ("tool_result", "a.txt"), ("assistant", "One file: a.txt")]
    assert len({d.session_id for d in drafts}) == 1 and len({d.key for d in drafts}) == len(drafts)
    assert drafts[4].tool["call_id"] == drafts[3].tool["call_id"] == "toolu_1"


def test_a_side_call_with_another_history_is_its_own_conversation():
    main = exchange([{"role": "user", "content": "fix the bug"}],
                    reply={"type": "message", "role": "assistant", "content": [{"type": "text", "text": "On it."}]})
    side = exchange([{"role": "user", "content": "quota"}],
                    reply={"type": "message", "role": "assistant", "content": [{"type": "text", "text": "A"}]})
    drafts = parse(main, side)
    assert len({d.session_id for d in drafts}) == 2


def test_a_tool_input_cut_off_mid_stream_is_kept_as_the_text_that_arrived():
    message = streamed_message(sse(
        {"type": "message_start", "message": {"id": "msg_2", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}},
        {"type": "content_block_stop", "index": 0}))
    assert message["content"] == [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": "{\"comm"}]


def test_a_stream_that_never_started_still_keeps_the_request():
    broken = exchange([{"role": "user", "content": "hello?"}], raw="event: ping\ndata: {not json\n\n")
    assert [(d.kind, d.text) for d in parse(broken)] == [("system", "You are Claude Code."), ("user", "hello?")]


def test_other_traffic_in_the_capture_is_a_system_event_in_the_conversation():
    call = exchange([{"role": "user", "content": "hi"}],
                    reply={"type": "message", "role": "assistant", "content": [{"type": "text", "text": "hello"}]})
    oauth = {"request": {"url": "https://console.anthropic.com/v1/oauth/token", "method": "POST", "headers": {},
                         "body": None}, "response": {"status": 200, "headers": {}, "body": {"ok": True}}}
    assert detect_format([call, oauth]) == "anthropic"
    drafts = parse(call, oauth)
    assert [(d.kind, d.text) for d in drafts][-1] == ("system", "POST https://console.anthropic.com/v1/oauth/token -> 200")
    assert len({d.session_id for d in drafts}) == 1


def test_other_traffic_reads_as_method_url_status_and_the_body_it_sent():
    from reducers.formats.http_capture import other_traffic
    assert other_traffic({"request": {"url": "https://x.example/a", "body": "k=v"}}) == "https://x.example/a\nk=v"
    assert other_traffic({"request": {"method": "GET", "url": "https://x.example/b", "body": {}},
                          "response": {"status_code": 404}}) == "GET https://x.example/b -> 404"
    # not an HTTP exchange: no URL, or no body recorded
    assert other_traffic({"request": {"body": {"run": 1}}}) is None
    assert other_traffic({"request": {"url": "https://x.example/c"}}) is None
    assert other_traffic(["request"]) is None


def test_a_captured_call_is_dated_by_its_request_and_its_reply_by_the_response():
    first = exchange([{"role": "user", "content": "say hi"}],
                     {"id": "msg_r1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}]})
    first["request"]["timestamp"], first["response"]["timestamp"] = 1760000000.1, 1760000002.5
    second = exchange([{"role": "user", "content": "say hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
                       {"role": "user", "content": "again"}])
    second["request"]["timestamp"] = 1760000010.0
    got = [(d.kind, d.text, d.ts) for d in parse(first, second)]
    assert got == [("system", "You are Claude Code.", "2025-10-09T08:53:20.100Z"),
                   ("user", "say hi", "2025-10-09T08:53:20.100Z"),
                   ("assistant", "hi", "2025-10-09T08:53:22.500Z"),
                   ("user", "again", "2025-10-09T08:53:30.000Z")]


def test_a_chat_completions_capture_is_dated_by_its_request_too():
    from reducers.formats import openai
    rec = {"request": {"url": "https://api.openai.com/v1/chat/completions", "method": "POST", "headers": {},
                       "timestamp": 1760000000.0,
                       "body": {"model": "gpt-x", "messages": [{"role": "user", "content": "ping"}]}},
           "response": {"status": 200, "timestamp": 1760000001.0, "body": {
               "id": "chatcmpl-1", "object": "chat.completion",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}}]}}}
    out = list(openai.parse([(1, rec)], ParseContext(path="/t/o.jsonl", source_id="/t/o.jsonl")))
    drafts = [d for d in out if isinstance(d, Draft)]
    assert [(d.text, d.ts) for d in drafts][0] == ("ping", "2025-10-09T08:53:20.000Z")
    assert all(d.ts is not None for d in drafts)
