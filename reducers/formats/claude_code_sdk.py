"""The Agent SDK's message stream (`claude -p --output-format stream-json
--verbose`, or `--output-format json --verbose` and claude-code-action's
execution log: the same messages as one JSON array) in the terms of the
session log claude_code.py reads: which lines only that stream writes, and
those lines renamed to the session log's own fields."""
from __future__ import annotations

from typing import Any, Iterable, Iterator


def elements(records: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """The records; a file that is one document holding them (see
    document_records) read one element at a time, each element's line its
    position from 1. An array on a later line of a JSONL file is no such
    document and stays one (bad) record."""
    first = True
    for line, rec in records:
        held = document_records(rec) if first else None
        if held is not None:
            yield from enumerate(held, 1)
        else:
            yield line, rec
        first = False


def document_records(value: Any) -> list | None:
    """The session records a whole-document file holds, or None: a JSON
    array of them (what `claude -p --output-format json --verbose` prints,
    claude-code-action's execution log) or an object whose `loglines` lists
    them (a Claude Code on the web session as its API returns it)."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("loglines"), list):
        return value["loglines"]
    return None


def sdk_marked(d: dict) -> bool:
    """A line only the SDK stream writes: a message or delta with its
    `parent_tool_use_id`, the `init` line, the `result` line."""
    rtype = d.get("type")
    return isinstance(d.get("session_id"), str) and (
        "parent_tool_use_id" in d or (rtype == "system" and d.get("subtype") == "init")
        or (rtype == "result" and "is_error" in d))


def sdk_line(rec: dict) -> dict:
    """A line of the Agent SDK's message stream (`claude -p --output-format
    stream-json --verbose`) in the session log's own terms: the session it
    names by `session_id`, a sub-agent's message (one sent under a Task
    call, `parent_tool_use_id`) as a sidechain of that call, an API error's
    flag and a compaction's `compact_metadata` as the log spells them.
    Session log lines come back as they are."""
    if "session_id" not in rec or "sessionId" in rec or not isinstance(rec.get("session_id"), str):
        return rec
    out = {**rec, "sessionId": rec["session_id"]}
    parent = rec.get("parent_tool_use_id")
    if isinstance(parent, str) and parent:
        out["isSidechain"] = True
        out.setdefault("agentId", parent)
    if rec.get("is_api_error_message") is True:
        out["isApiErrorMessage"] = True
    cm = rec.get("compact_metadata")
    if isinstance(cm, dict) and "compactMetadata" not in rec:
        out["compactMetadata"] = {"trigger": cm.get("trigger"), "preTokens": cm.get("pre_tokens"),
                                  **{k: v for k, v in cm.items() if k not in ("trigger", "pre_tokens")}}
    return out
