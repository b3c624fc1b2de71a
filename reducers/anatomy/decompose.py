"""One model-call request body, decomposed: what its context held, slice by
slice (reducers/anatomy/slices.py), message by message.

Accepted bodies (the `request_bodies` shapes):
- Anthropic Messages: {"model", "system"?, "tools"?, "messages": [...]};
- OpenAI Chat Completions: {"model", "messages": [...], "tools"? | "functions"?}
  (system and developer messages are the system prompt);
- OpenAI Responses: {"model", "instructions"?, "tools"?, "input": str | [items]};
each optionally with the `response` that came back (its `usage` is kept).
A logged call {"request": <body>, "response": <reply>}, an HTTP capture
of one, and Message Batches / Batch API request lines hold such a body.

Sizes are UTF-8 bytes of what the model reads: text as sent (a list of
text blocks counts each block's text; no separators are invented), a tool
call as its name plus its arguments JSON, a tool schema list as compact
JSON (separators "," and ":", characters unescaped): `toolSchemaBytes` is
the request's `tools` (and legacy `functions`); a tool a message defines
mid-conversation (Anthropic `tool_addition`) is in the `tools` slice. Images and other
media blocks count no bytes; they are counted in `mediaBlocks`. Tokens are
cl100k_base counts (reducers/tokens.py), an estimate for other models'
tokenizers: a response's `usage`, when present, is the real figure."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from reducers.anatomy.slices import Carved, Measure, add_slices, carve, measure_text, ordered
from reducers.formats.common import compact_json, content_digest, sorted_json
from reducers.formats.http_capture import exchange_body

ACCEPTED_SHAPES = ("a request body with `messages` (Anthropic Messages, OpenAI Chat Completions) or `input` "
                   "(OpenAI Responses), a logged call {\"request\", \"response\"}, or a batch request line; "
                   "one JSON object, a JSON array of them, or JSON Lines")
_NOT_REQUEST_KEYS = ("response", "error")              # what came back, not what was sent
_SYSTEM_ROLES = ("system", "developer")
_TOOL_ROLES = ("tool", "function", "ipython")
_MEDIA_BLOCKS = ("image", "image_url", "input_image", "input_audio", "file", "input_file", "document", "audio")
_RESULT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output",
                 "computer_call_output", "mcp_call_output")


class NotARequest(ValueError):
    """A record that holds no model-call request."""


@dataclass
class Anatomy:
    api: str                                   # anthropic-messages | openai-chat | openai-responses
    model: str | None
    slices: dict[str, dict[str, int]]
    messages: list[dict]                       # one row per message: i, role, bytes, tokens, slices, digest
    system_bytes: int                          # the whole system prompt as sent
    workspace_bytes: int
    skill_bytes: int
    tool_schema_bytes: int
    tool_count: int
    user_text: str                             # the current user message (topic detection)
    user_bytes: int
    marker_count: int
    media_blocks: int
    request_bytes: int
    request_hash: str
    response: Any = None
    found: list[dict] = field(default_factory=list)

    @property
    def message_rows(self) -> list[dict]:
        """The rows of `messages` / `input` (not the top-level system prompt)."""
        return [m for m in self.messages if isinstance(m["i"], int)]

    @property
    def history_count(self) -> int:
        return sum(1 for m in self.message_rows if m["role"] not in _SYSTEM_ROLES)


def request_bodies(rec: Any) -> Iterator[dict | None]:
    """The request bodies a decoded record holds (an array holds several);
    None for an HTTP exchange that is no model call (telemetry in a capture)."""
    if isinstance(rec, list):
        if not rec:
            raise NotARequest("an empty JSON array")
        for item in rec:
            yield from request_bodies(item)
        return
    body = request_body(rec)
    if body is None:
        if isinstance(rec, dict) and isinstance(rec.get("request"), dict) and "url" in rec["request"]:
            yield None                         # other traffic of a capture
            return
        raise NotARequest(_describe(rec))
    yield body


def request_body(rec: Any) -> dict | None:
    if not isinstance(rec, dict):
        return None
    if _is_body(rec):
        return rec
    exchange = exchange_body(rec)
    if exchange is not None:
        return exchange
    params = rec.get("params") if "custom_id" in rec else None        # Message Batches request line
    if isinstance(params, dict) and _is_body(params):
        return params
    body = rec.get("body") if "custom_id" in rec else None            # OpenAI Batch API input line
    if isinstance(body, dict) and _is_body(body):
        return body
    return None


def _is_body(rec: dict) -> bool:
    inp = rec.get("input")
    return isinstance(rec.get("messages"), list) or (
        isinstance(inp, str) and ("model" in rec or "instructions" in rec)) or (
        isinstance(inp, list) and all(isinstance(i, dict) for i in inp[:50]))


def _describe(rec: Any) -> str:
    if isinstance(rec, dict):
        keys = ", ".join(sorted(map(str, rec))[:8]) or "none"
        if "input" in rec:
            return f"its `input` is no conversation (an embeddings or moderation request?) (keys: {keys})"
        return f"an object with no `messages` or `input` (keys: {keys})"
    return f"a JSON {type(rec).__name__}, not an object"


def api_of(body: dict) -> str:
    if not isinstance(body.get("messages"), list):
        return "openai-responses"
    from reducers.formats import anthropic
    return "anthropic-messages" if anthropic.sniff([body]) else "openai-chat"


def request_hash(body: dict) -> str:
    """sha256 of the request (the body without what came back), keys sorted."""
    return hashlib.sha256(sorted_json(_request_only(body))).hexdigest()


def _request_only(body: dict) -> dict:
    return {k: v for k, v in body.items() if k not in _NOT_REQUEST_KEYS}


class _Tally:
    """Running totals while a body is read."""

    def __init__(self, measure: Measure):
        self.measure = measure
        self.slices: dict[str, dict[str, int]] = {}
        self.found: list[dict] = []
        self.media = 0

    def take(self, text: str, container: str, row: Carved) -> Carved:
        carved = carve(text, container, self.measure)
        add_slices(self.slices, carved)
        self.found.extend(carved.found)
        row.merge(carved)
        return carved


def decompose(body: dict, measure: Measure = measure_text) -> Anatomy:
    """The anatomy of one request body (raises NotARequest)."""
    if not _is_body(body):
        raise NotARequest(_describe(body))
    tally = _Tally(measure)
    api = api_of(body)
    messages = _messages(body)
    current = _current_user(messages)
    rows: list[dict] = []
    system_bytes = 0
    user_text_parts: list[str] = []
    user_bytes = 0

    system = body.get("system") if "system" in body else None
    instructions = body.get("instructions")
    for head, value in (("system", system), ("instructions", instructions)):
        if value in (None, "", []):
            continue
        row = Carved()
        for text in _texts(value, tally):
            tally.take(text, "system", row)
        system_bytes += sum(row.bytes.values())
        rows.append(_row(head, "system", row, value))

    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg.get("role"), str) else msg.get("type", "item")
        row = Carved()
        for container, text in _pieces(msg, i == current, tally):
            carved = tally.take(text, container, row)
            if container == "user":
                user_text_parts.append(text)
                user_bytes += sum(carved.bytes.values())
        if role in _SYSTEM_ROLES:
            system_bytes += sum(b for slice_, b in row.bytes.items() if slice_ != "tools")
        rows.append(_row(i, str(role), row, msg))

    tools = [t for key in ("tools", "functions") if isinstance(body.get(key), list) for t in body[key]]
    tool_schema_bytes = 0
    if tools:
        schema = "".join(compact_json(body[key]) for key in ("tools", "functions") if isinstance(body.get(key), list))
        tool_bytes, tool_tokens = measure(schema)
        tool_schema_bytes = tool_bytes
        cell = tally.slices.setdefault("tools", {"bytes": 0, "tokens": 0})    # (tools added mid-conversation too)
        cell["bytes"] += tool_bytes
        cell["tokens"] += tool_tokens

    response = body.get("response")
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if isinstance(response, dict) and isinstance(response.get("model"), str) and not model:
        model = response["model"]
    found = tally.found
    return Anatomy(
        api=api, model=model, slices=ordered(tally.slices), messages=rows, system_bytes=system_bytes,
        workspace_bytes=sum(f["bytes"] for f in found if f["slice"] == "workspace"),
        skill_bytes=sum(f["bytes"] for f in found if f["slice"] == "skills"),
        tool_schema_bytes=tool_schema_bytes, tool_count=len(tools),
        user_text="\n\n".join(user_text_parts), user_bytes=user_bytes,
        marker_count=sum(1 for f in found if f["what"] == "marker"), media_blocks=tally.media,
        request_bytes=len(compact_json(_request_only(body)).encode("utf-8", "surrogatepass")),
        request_hash=request_hash(body), response=response, found=found)


def _row(index: Any, role: str, row: Carved, source: Any) -> dict:
    return {"i": index, "role": role, "bytes": sum(row.bytes.values()), "tokens": sum(row.tokens.values()),
            "slices": dict(row.bytes), "digest": message_digest(source)}


def _messages(body: dict) -> list[dict]:
    msgs = body.get("messages")
    if isinstance(msgs, list):
        return [m if isinstance(m, dict) else {"role": "unknown", "content": m} for m in msgs]
    inp = body.get("input")
    if isinstance(inp, str):
        return [{"role": "user", "content": inp}]
    return [i if isinstance(i, dict) else {"role": "unknown", "content": i} for i in inp or ()]


def _is_tool_result_block(block: Any) -> bool:
    return isinstance(block, dict) and str(block.get("type", "")).endswith("tool_result")


def _current_user(messages: list[dict]) -> int | None:
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


def _pieces(msg: dict, current: bool, tally: _Tally) -> Iterator[tuple[str, str]]:
    """(container slice, text) of every part of one message or input item."""
    role = msg.get("role")
    mtype = msg.get("type")
    if role in _SYSTEM_ROLES:
        content = msg.get("content")
        for block in content if isinstance(content, list) else [content]:
            yield from _block(block, "system", tally)
        return
    if role in _TOOL_ROLES or mtype in _RESULT_ITEMS:
        for text in _texts(msg.get("content", msg.get("output")), tally):
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
    for key in ("reasoning_content", "reasoning"):
        if isinstance(msg.get(key), str) and msg[key]:
            yield "history", msg[key]


def _block(block: Any, own: str, tally: _Tally) -> Iterator[tuple[str, str]]:
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
        for text in _texts(block.get("content"), tally):
            yield "tool_results", text
    elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
        yield "history", _call_text(block.get("name"), block.get("input"))
    elif btype in ("thinking", "redacted_thinking"):
        if isinstance(block.get("thinking"), str) and block["thinking"]:
            yield "history", block["thinking"]
    elif btype == "tool_addition":                    # a tool defined mid-conversation (Anthropic)
        yield "tools", compact_json(block.get("tool", block))
    elif btype == "compaction":
        for text in _texts(block.get("content"), tally):
            yield "history", text
    else:
        for text in _texts([block], tally):
            yield own, text


def _item(item: dict, tally: _Tally) -> Iterator[tuple[str, str]]:
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


def _texts(content: Any, tally: _Tally) -> Iterator[str]:
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
        elif block.get("type") == "document" and _document_text(block) is not None:
            yield _document_text(block)
        elif block.get("type") in _MEDIA_BLOCKS:
            tally.media += 1
        elif "content" in block:
            yield from _texts(block["content"], tally)
        elif isinstance(block.get("output"), str):
            yield block["output"]
        else:
            yield compact_json(block)


def _document_text(block: dict) -> str | None:
    """A plain-text document's text (binary ones are media)."""
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "text" and isinstance(source.get("data"), str):
        return source["data"]
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
