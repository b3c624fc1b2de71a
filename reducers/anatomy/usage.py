"""A call's token usage as its provider reported it, in one shape.

`contextTokens` is what the call read: its whole prompt, cached or not.
- Anthropic (Messages API, Claude Code): input_tokens + cache_creation_input_tokens
  + cache_read_input_tokens (input_tokens alone counts only the uncached tail);
- OpenAI Chat Completions: prompt_tokens (cached tokens are part of it);
- OpenAI Responses and Codex token_count: input_tokens (cached_input_tokens
  are part of it).
Output tokens are kept beside it; they enter the context of the next call."""
from __future__ import annotations

from typing import Any


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def normalise(usage: Any) -> dict | None:
    """{contextTokens, inputTokens, cacheReadTokens, cacheWriteTokens,
    outputTokens, reasoningTokens?} from any of the shapes above; None when
    it holds no prompt count."""
    if not isinstance(usage, dict):
        return None
    if _int(usage.get("prompt_tokens")) is not None:                       # Chat Completions
        details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
        cached = _int(details.get("cached_tokens")) or 0
        prompt = usage["prompt_tokens"]
        out = {"contextTokens": prompt, "inputTokens": prompt - cached, "cacheReadTokens": cached,
               "cacheWriteTokens": 0, "outputTokens": _int(usage.get("completion_tokens")) or 0}
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") \
            if isinstance(usage.get("completion_tokens_details"), dict) else None
        if _int(reasoning):
            out["reasoningTokens"] = reasoning
        return out
    inp = _int(usage.get("input_tokens"))
    if inp is None:
        return None
    output = _int(usage.get("output_tokens")) or 0
    if "cache_creation_input_tokens" in usage or "cache_read_input_tokens" in usage:     # Anthropic
        write = _int(usage.get("cache_creation_input_tokens")) or 0
        read = _int(usage.get("cache_read_input_tokens")) or 0
        return {"contextTokens": inp + write + read, "inputTokens": inp, "cacheReadTokens": read,
                "cacheWriteTokens": write, "outputTokens": output}
    details = usage.get("input_tokens_details") if isinstance(usage.get("input_tokens_details"), dict) else {}
    cached = _int(usage.get("cached_input_tokens")) or _int(details.get("cached_tokens")) or 0   # Codex / Responses
    out = {"contextTokens": inp, "inputTokens": inp - cached, "cacheReadTokens": cached,
           "cacheWriteTokens": _int(usage.get("cache_write_input_tokens")) or 0, "outputTokens": output}
    reasoning = _int(usage.get("reasoning_output_tokens"))
    if reasoning is None and isinstance(usage.get("output_tokens_details"), dict):
        reasoning = _int(usage["output_tokens_details"].get("reasoning_tokens"))
    if reasoning:
        out["reasoningTokens"] = reasoning
    return out


def response_usage(response: Any) -> dict | None:
    """The `usage` of a saved reply (a Message, a chat.completion, a
    Responses object), as reported."""
    if isinstance(response, dict) and isinstance(response.get("usage"), dict):
        return response["usage"]
    return None
