"""A capture of a streamed OpenAI call keeps its reply: the server-sent
events are put back together as the call would have returned them
unstreamed (Chat Completions chunks, a Responses API stream), so ingest
logs the reply and anatomy records carry its usage."""
from __future__ import annotations

import json

from tests.helpers import cli


def _sse(events: list[dict]) -> str:
    return "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events) + "data: [DONE]\n\n"


def _chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": choices,
            **({"usage": usage} if usage else {})}


def _exchange(url: str, body: dict, raw: str) -> dict:
    return {"request": {"method": "POST", "url": url, "headers": {}, "body": body},
            "response": {"status": 200, "headers": {"content-type": "text/event-stream"}, "body_raw": raw}}


CHAT = "https://api.openai.com/v1/chat/completions"
ASK = [{"role": "user", "content": "What is the weather in Oslo?"}]


def _tool_call_stream() -> str:
    return _sse([
        _chunk({"role": "assistant", "content": None,
                "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                "function": {"name": "weather", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
        _chunk({}, finish="tool_calls"),
        _chunk(usage={"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51})])


def _ingested(tmp_path, *exchanges: dict) -> list[dict]:
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in exchanges), encoding="utf-8")
    run = cli("ingest", str(path), "--json")
    assert run.code == 0, run.err
    return cli("show", "1..50", "--json").lines()


def test_a_streamed_chat_reply_is_logged_with_its_tool_call_arguments_joined(tmp_path):
    events = _ingested(tmp_path, _exchange(CHAT, {"model": "gpt-4o", "stream": True, "messages": ASK}, _tool_call_stream()))
    assert [e["kind"] for e in events if e["kind"] != "task_state"] == ["user", "tool_call"]
    call = next(e for e in events if e["kind"] == "tool_call")
    assert "weather" in call["text"] and "Oslo" in call["text"]


def test_the_next_request_resending_a_streamed_reply_continues_the_same_conversation(tmp_path):
    first = _exchange(CHAT, {"model": "gpt-4o", "stream": True, "messages": ASK}, _tool_call_stream())
    resent = ASK + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4 °C, snow"}]
    answer = _sse([_chunk({"role": "assistant", "content": "It is 4 °C "}), _chunk({"content": "and snowing ❄"}, "stop")])
    second = _exchange(CHAT, {"model": "gpt-4o", "stream": True, "messages": resent}, answer)
    events = [e for e in _ingested(tmp_path, first, second) if e["kind"] != "task_state"]
    assert [e["kind"] for e in events] == ["user", "tool_call", "tool_result", "assistant"]
    assert len({e["session_id"] for e in events}) == 1
    assert events[-1]["text"] == "It is 4 °C and snowing ❄"


def test_a_streamed_replys_usage_is_the_records_token_count(tmp_path):
    responses_reply = {"id": "resp_1", "object": "response", "model": "gpt-4.1", "status": "completed",
                       "output": [{"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "Bonjour"}]}],
                       "usage": {"input_tokens": 23, "output_tokens": 2}}
    responses_raw = _sse([{"type": "response.created", "response": {**responses_reply, "output": [], "usage": None}},
                          {"type": "response.output_text.delta", "delta": "Bonjour"},
                          {"type": "response.completed", "response": responses_reply}])
    calls = [_exchange(CHAT, {"model": "gpt-4o", "stream": True, "messages": ASK}, _tool_call_stream()),
             _exchange("https://api.openai.com/v1/responses", {"model": "gpt-4.1", "stream": True, "input": "Say hello"},
                       responses_raw)]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    run = cli("anatomy", "record", str(path), "--session", "streams", "--json")
    assert run.code == 0, run.err
    chat, responses = run.lines()
    assert (chat["contextTokens"], chat["contextTokensSource"], chat["usage"]["outputTokens"]) == (42, "usage", 9)
    assert (responses["contextTokens"], responses["contextTokensSource"]) == (23, "usage")
