"""The known formats, in the order auto-detection tries them: the most
specific shapes first, so a generic role/content message list is only
called OpenAI once nothing narrower claims it."""
from __future__ import annotations

import importlib
from types import ModuleType

DETECTION_ORDER = ("trace", "claude-code", "codex", "gemini-cli", "opencode", "anthropic", "openai")
_MODULES = {
    "trace": "reducers.formats.trace_events",
    "claude-code": "reducers.formats.claude_code",
    "codex": "reducers.formats.codex",
    "gemini-cli": "reducers.formats.gemini_cli",
    "opencode": "reducers.formats.opencode",
    "anthropic": "reducers.formats.anthropic",
    "openai": "reducers.formats.openai",
}


def format_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(_MODULES[name])
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of: auto, {', '.join(DETECTION_ORDER)}") from None


def detect_format(samples: list) -> str | None:
    """The first format whose sniff claims these records, or None."""
    for name in DETECTION_ORDER:
        try:
            if format_module(name).sniff(samples):
                return name
        except Exception:       # a sniff must never take ingest down; treat as "not mine"
            continue
    return None


def undecided(fmt: str | None, samples: list) -> bool:
    """Whether `fmt` was only a default: plain role/content messages, one
    per line, either chat API could have written, where a later line (a
    tool block, a tool_calls list) may still tell which one did."""
    return fmt == "openai" and format_module("anthropic").plain_chat(samples)


CHAT_APIS = ("openai", "anthropic")


def mismatched_format(named: str, samples: list) -> str | None:
    """The format these records plainly are when it is not `named`: the
    named parser does not claim them and another does. Plain role/content
    chat either API could have written fits both chat APIs; when nobody
    claims the records, the user's --format is the best guess there is."""
    if not samples:
        return None
    try:
        if format_module(named).sniff(samples):
            return None
    except Exception:
        pass
    detected = detect_format(samples)
    if detected in (None, named):
        return None
    if named in CHAT_APIS and detected in CHAT_APIS and detected not in format_module("anthropic").api_marks(samples):
        return None
    # One odd record among the named format's own (a damaged or stray line)
    # does not make the file another format's: that takes most of them.
    if 2 * sum(1 for s in samples if _claims(named, s)) >= len(samples):
        return None
    return detected


def _claims(named: str, record) -> bool:
    """Whether the named format reads this one record as its own (a chat
    API also reads plain role/content data either could have written)."""
    if named in CHAT_APIS:
        return format_module("anthropic").chat_kind(record) in (named, "neutral")
    try:
        return bool(format_module(named).sniff([record]))
    except Exception:
        return False
