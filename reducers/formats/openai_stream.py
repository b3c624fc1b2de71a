"""An OpenAI reply that came as server-sent events, put back together the way
the non-streamed call would have returned it, so a capture of a streamed
call keeps its reply and its usage:

- Chat Completions: `chat.completion.chunk` events, each choice's deltas
  joined (content, refusal, reasoning_content, tool calls by index: id,
  name and argument pieces), the last chunk's `usage` when the client
  asked for it (`stream_options.include_usage`);
- Responses API: the `response` object of the closing event
  (`response.completed`, `.incomplete` or `.failed`)."""
from __future__ import annotations

from typing import Any, Iterable

_TEXT_DELTAS = ("content", "refusal", "reasoning_content")
_CLOSING = ("response.completed", "response.incomplete", "response.failed")


def rebuilt_reply(events: Iterable[Any]) -> dict | None:
    """The reply the decoded `data:` payloads of a stream make; None when
    they are no OpenAI stream."""
    completion: dict | None = None
    choices: dict[int, dict] = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("type") in _CLOSING and isinstance(event.get("response"), dict):
            return event["response"]
        if event.get("object") != "chat.completion.chunk":
            continue
        if completion is None:
            completion = {k: event[k] for k in ("id", "created", "model", "system_fingerprint") if k in event}
            completion["object"] = "chat.completion"
        if isinstance(event.get("usage"), dict):
            completion["usage"] = event["usage"]
        for choice in event.get("choices") or ():
            if isinstance(choice, dict):
                _apply(choices.setdefault(int(choice.get("index") or 0), {"message": {}}), choice)
    if completion is None:
        return None
    completion["choices"] = [{"index": i, **_finished(choices[i])} for i in sorted(choices)]
    return completion


def _apply(state: dict, choice: dict) -> None:
    message = state["message"]
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    if isinstance(delta.get("role"), str):
        message["role"] = delta["role"]
    for key in _TEXT_DELTAS:
        if isinstance(delta.get(key), str):
            message[key] = message.get(key, "") + delta[key]
    for call in delta.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        slot = state.setdefault("calls", {}).setdefault(int(call.get("index") or 0), {"function": {}})
        for key in ("id", "type"):
            if call.get(key):
                slot[key] = call[key]
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        if fn.get("name"):
            slot["function"]["name"] = fn["name"]
        if isinstance(fn.get("arguments"), str):
            slot["function"]["arguments"] = slot["function"].get("arguments", "") + fn["arguments"]
    if choice.get("finish_reason") is not None:
        state["finish_reason"] = choice["finish_reason"]


def _finished(state: dict) -> dict:
    message = {"role": "assistant", **state["message"]}
    message.setdefault("content", None)
    if state.get("calls"):
        message["tool_calls"] = [{"type": "function", **state["calls"][i]} for i in sorted(state["calls"])]
    out = {"message": message}
    if "finish_reason" in state:
        out["finish_reason"] = state["finish_reason"]
    return out
