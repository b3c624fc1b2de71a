"""Clearing old thinking (the continuity spec's `clear_thinking`, keep 2):
the model's reasoning in all but its last KEEP_TURNS responses that hold
thinking is replaced
by a placeholder that names the event, so it can be read back with `trace
show`. The log is untouched; this is the pack's view.

A response is a run of assistant output (text, thinking, tool calls) between
inputs (user messages, tool results). Parsers write thinking as
`<thinking>…</thinking>`, either a whole event (meta.thinking) or a block
inside an assistant event that merged it with visible text."""
from __future__ import annotations

import re

from reducers.tokens import count_tokens

KEEP_TURNS = 2
_BLOCK = re.compile(r"<thinking>.*?(?:</thinking>|\Z)", re.DOTALL)
_OUTPUT = ("assistant", "tool_call", "artifact_ref")


def placeholder(event: dict, tokens: int) -> str:
    return f"[thinking cleared ({tokens} tokens); trace show {event['seq']}]"


def clear_old_thinking(events: list[dict], keep_turns: int = KEEP_TURNS) -> list[dict]:
    """`events` (conversation, in order) with thinking cleared outside the
    last `keep_turns` responses; events without thinking are the same objects."""
    keep_from = _start_of_last_responses(events, keep_turns)
    out = list(events)
    for i in range(keep_from):
        e = events[i]
        if e["kind"] != "assistant" or "<thinking>" not in (e.get("text") or ""):
            continue
        text = e["text"]
        thought = sum(count_tokens(m.group(0)) for m in _BLOCK.finditer(text))
        stub = placeholder(e, thought)
        cleared = _BLOCK.sub(lambda m: stub, text, count=1)
        cleared = _BLOCK.sub("", cleared).strip()
        out[i] = {**e, "text": cleared, "tokens": count_tokens(cleared),
                  "meta": {**(e.get("meta") or {}), "thinking_cleared": thought}}
    return out


def _start_of_last_responses(events: list[dict], keep: int) -> int:
    """Index where the last `keep` responses that hold thinking begin (0
    when there are fewer): a response without thinking does not use up the
    allowance (Anthropic's thinking turns)."""
    if keep <= 0:
        return len(events)
    seen, start, thinking = 0, len(events), False
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if e["kind"] in _OUTPUT:
            start = i
            thinking = thinking or (e["kind"] == "assistant" and "<thinking>" in (e.get("text") or ""))
            continue
        if thinking:                               # a response with thinking just ended (going back)
            seen += 1
            if seen >= keep:
                return start
        thinking = False
    return 0
