"""Tool-result retention (Anthropic's clear_tool_uses, Claude Code's
microcompact), run on every render: once tool results pass a trigger, old
ones are replaced by a short placeholder — the call stays, so the model
still knows what was done — keeping the last K, clearing at least a minimum,
never touching excluded tools or a protected tool's latest state (events
marked `meta.pinned` by the renderer). The full output stays in the log."""
from __future__ import annotations

from dataclasses import dataclass

from reducers.tokens import count_tokens

@dataclass(frozen=True)
class Retention:
    trigger_tokens: int = 30_000       # clear only when tool results hold more than this
    keep_last: int = 8                  # the most recent results always stay whole
    clear_at_least: int = 0             # once triggered, clear at least this many tokens
    excluded_tools: tuple[str, ...] = ()


def placeholder(event: dict) -> str:
    return f"[tool result cleared ({event.get('tokens') or 0} tokens); trace show {event['seq']} --full]"


def clear_old_results(events: list[dict], cfg: Retention = Retention()) -> list[dict]:
    results = [i for i, e in enumerate(events) if e["kind"] == "tool_result"
               and (e.get("tool") or {}).get("name") not in cfg.excluded_tools
               and not (e.get("meta") or {}).get("synthetic") and not (e.get("meta") or {}).get("pinned")]
    total = sum(events[i].get("tokens") or 0 for i in results)
    if total <= cfg.trigger_tokens:
        return events
    candidates = results[:-cfg.keep_last] if cfg.keep_last else results
    out = list(events)
    cleared = 0
    for i in candidates:                          # oldest first
        if total - cleared <= cfg.trigger_tokens and cleared >= cfg.clear_at_least:
            break
        e = events[i]
        stub = cleared_result(e)
        if stub["tokens"] >= (e.get("tokens") or 0):
            continue
        out[i] = stub
        cleared += (e.get("tokens") or 0) - stub["tokens"]
    return out


def cleared_result(e: dict) -> dict:
    """A tool result replaced by its placeholder (the call stays)."""
    text = placeholder(e)
    return {**e, "text": text, "tokens": count_tokens(text), "meta": {**(e.get("meta") or {}), "cleared": True}}
