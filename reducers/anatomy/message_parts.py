"""What one message of a request body holds, part by part: each text the
model reads with the slice it is sent as (system, user, history,
tool_results, tools), media blocks counted, and a digest of the message
as a later request resends it. Used by reducers/anatomy/decompose.py;
the counts go to an object with a `media` attribute."""
from __future__ import annotations

from typing import Any, Iterator

from reducers.formats.common import compact_json, content_digest

SYSTEM_ROLES = ("system", "developer")
_TOOL_ROLES = ("tool", "function", "ipython")
_MEDIA_BLOCKS = ("image", "image_url", "input_image", "input_audio", "file", "input_file", "document", "audio")
_RESULT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output",
                 "computer_call_output", "mcp_call_output")


def messages_of(body: dict) -> list[dict]:
    msgs = body.get("messages")
    if isinstance(msgs, list):
        return [m if isinstance(m, dict) else {"role": "unknown", "content": m} for m in msgs]
    inp = body.get("input")
    if isinstance(inp, str):
        return [{"role": "user", "content": inp}]
    return [i if isinstance(i, dict) else {"role": "unknown", "content": i} for i in inp or ()]


def _is_tool_result_block(block: Any) -> bool:
    return isinstance(block, dict) and str(block.get("type", "")).endswith("tool_result")


def current_user(messages: list[dict]) -> int | None:
    """The index of the current user message: the last user message with
    content of its own (a message of tool results only answers a call)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return i if content else None
        if isinstance(content, list) and any(not _is_tool_result_block(b) for b in content):
            return i
    return None


def pieces(msg: dict, current: bool, tally) -> Iterator[tuple[str, str]]:
    """(container slice, text) of every part of one message or input item."""
    role = msg.get("role")
    mtype = msg.get("type")
    if role in SYSTEM_ROLES:
        content = msg.get("content")
        for block in content if isinstance(content, list) else [content]:
            yield from _block(block, "system", tally)
        return
    if role in _TOOL_ROLES or mtype in _RESULT_ITEMS:
        for text in texts(msg.get("content", msg.get("output")), tally):
            yield "tool_results", text
        return
    if role is None and isinstance(mtype, str) and mtype != "message":
        yield from _item(msg, tally)
        return
    own = "user" if current else "history"
    content = msg.get("content")
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        yield from _block(block, own, tally)
    for call in _calls(msg):
        yield "history", call
    for key in ("refusal", "reasoning_content", "reasoning"):     # (an assistant's refusal is resent as its reply)
        if isinstance(msg.get(key), str) and msg[key]:
            yield "history", msg[key]


def _block(block: Any, own: str, tally) -> Iterator[tuple[str, str]]:
    if block is None:
        return
    if isinstance(block, str):
        if block:
            yield own, block
        return
    if not isinstance(block, dict):
        yield own, compact_json(block)
        return
    btype = block.get("type")
    if _is_tool_result_block(block):
        for text in texts(block.get("content"), tally):
            yield "tool_results", text
    elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
        yield "history", _call_text(block.get("name"), block.get("input"))
    elif btype in ("thinking", "redacted_thinking"):
        if isinstance(block.get("thinking"), str) and block["thinking"]:
            yield "history", block["thinking"]
    elif btype == "tool_addition":                    # a tool defined mid-conversation (Anthropic)
        yield "tools", compact_json(block.get("tool", block))
    elif btype == "compaction":
        for text in texts(block.get("content"), tally):
            yield "history", text
    else:
        for text in texts([block], tally):
            yield own, text


def _item(item: dict, tally) -> Iterator[tuple[str, str]]:
    """A Responses API input item that is not a role message."""
    itype = item.get("type")
    if itype in ("function_call", "custom_tool_call"):
        yield "history", _call_text(item.get("name"), item.get("arguments", item.get("input")))
    elif itype == "reasoning":
        for part in item.get("summary") or item.get("content") or ():
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]:
                yield "history", part["text"]
    else:
        yield "history", compact_json({k: v for k, v in item.items() if k not in ("id", "encrypted_content")})


def _calls(msg: dict) -> Iterator[str]:
    calls = msg.get("tool_calls") or msg.get("toolCalls")
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        fn = fn if isinstance(fn, dict) else (call if isinstance(call, dict) else {})
        yield _call_text(fn.get("name"), fn.get("arguments", fn.get("input")))
    if isinstance(msg.get("function_call"), dict):
        fc = msg["function_call"]
        yield _call_text(fc.get("name"), fc.get("arguments"))


def _call_text(name: Any, arguments: Any) -> str:
    args = arguments if isinstance(arguments, str) else compact_json(arguments if arguments is not None else {})
    return f"{name if isinstance(name, str) else ''}{args}"


def texts(content: Any, tally) -> Iterator[str]:
    """The texts of a content value: a string, or each text block of a list
    (nested tool-result content included); media blocks are counted."""
    if content is None:
        return
    if isinstance(content, str):
        if content:
            yield content
        return
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        yield compact_json(content)
        return
    for block in content:
        if isinstance(block, str):
            if block:
                yield block
        elif not isinstance(block, dict):
            yield compact_json(block)
        elif isinstance(block.get("text"), str):
            if block["text"]:
                yield block["text"]
        elif block.get("type") == "document" and _document_texts(block) is not None:
            yield from texts(_document_texts(block), tally)
        elif block.get("type") == "refusal" and isinstance(block.get("refusal"), str):
            if block["refusal"]:
                yield block["refusal"]
        elif block.get("type") in _MEDIA_BLOCKS:
            tally.media += 1
        elif "content" in block:
            yield from texts(block["content"], tally)
        elif isinstance(block.get("output"), str):
            yield block["output"]
        else:
            yield compact_json(block)


def _document_texts(block: dict) -> Any:
    """A document's text: a plain-text source's data, or a content
    source's blocks (a PDF, a file id or a URL is media)."""
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        return source["data"]
    if source.get("type") == "content" and isinstance(source.get("content"), (str, list)):
        return source["content"]
    return None


def message_digest(msg: Any) -> str:
    """A message as a later request resends it: cache_control marks the
    client moves from message to message do not count, nor an empty
    content's spelling, nor the extra fields of a resent tool call."""
    if not isinstance(msg, dict):
        return content_digest(msg)
    content = msg.get("content", msg.get("output"))
    if isinstance(content, list):
        content = [_as_resent(b) for b in content]
    calls = msg.get("tool_calls") or msg.get("toolCalls")
    ids = [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else None
    return content_digest([msg.get("role", msg.get("type")), content or None, ids,
                           msg.get("tool_call_id", msg.get("call_id"))])


def _as_resent(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    if str(block.get("type", "")).endswith("tool_use") and block.get("id"):
        return {"type": "tool_use", "id": block["id"]}
    return {k: v for k, v in block.items() if k != "cache_control"}
