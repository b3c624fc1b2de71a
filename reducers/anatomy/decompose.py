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
mid-conversation (Anthropic `tool_addition`) is in the `tools` slice. A
document's text (a `text` or `content` source) counts as text; images,
audio, PDFs and other media blocks count no bytes; they are counted in
`mediaBlocks`. An assistant's refusal (field or part) is its reply's text.
A capture that logged a body as a JSON string is read as that body. Tokens are
cl100k_base counts (reducers/tokens.py), an estimate for other models'
tokenizers: a response's `usage`, when present, is the real figure."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from reducers.anatomy.message_parts import SYSTEM_ROLES, current_user, message_digest, messages_of, pieces, texts
from reducers.anatomy.slices import Carved, Measure, add_slices, carve, measure_text, ordered
from reducers.formats.common import compact_json, sorted_json
from reducers.formats.http_capture import exchange_body
from reducers.json_kinds import json_kind

ACCEPTED_SHAPES = ("a request body with `messages` (Anthropic Messages, OpenAI Chat Completions) or `input` "
                   "(OpenAI Responses), a logged call {\"request\", \"response\"}, or a batch request line; "
                   "one JSON object, a JSON array of them, or JSON Lines")
_NOT_REQUEST_KEYS = ("response", "error")              # what came back, not what was sent


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
    chained_to: str | None = None              # Responses API: the stored response or conversation it extends

    @property
    def message_rows(self) -> list[dict]:
        """The rows of `messages` / `input` (not the top-level system prompt)."""
        return [m for m in self.messages if isinstance(m["i"], int)]

    @property
    def history_count(self) -> int:
        return sum(1 for m in self.message_rows if m["role"] not in SYSTEM_ROLES)


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
        if "messages" in rec:
            return f"its `messages` is a JSON {json_kind(rec['messages'])}, not a list of messages (keys: {keys})"
        return f"an object with no `messages` or `input` (keys: {keys})"
    return f"a JSON {json_kind(rec)}, not an object"


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
    messages = messages_of(body)
    current = current_user(messages)
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
        for text in texts(value, tally):
            tally.take(text, "system", row)
        system_bytes += sum(row.bytes.values())
        rows.append(_row(head, "system", row, value))

    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg.get("role"), str) else msg.get("type", "item")
        row = Carved()
        for container, text in pieces(msg, i == current, tally):
            carved = tally.take(text, container, row)
            if container == "user":
                user_text_parts.append(text)
                user_bytes += sum(carved.bytes.values())
        if role in SYSTEM_ROLES:
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
        request_hash=request_hash(body), response=response, found=found, chained_to=_chained_to(body))


def _chained_to(body: dict) -> str | None:
    """What a Responses API request continues on the server: its input is
    only what is new; the earlier turns are not in the body."""
    prev = body.get("previous_response_id")
    if isinstance(prev, str) and prev:
        return prev
    conv = body.get("conversation")
    conv = conv.get("id") if isinstance(conv, dict) else conv
    return conv if isinstance(conv, str) and conv else None


def _row(index: Any, role: str, row: Carved, source: Any) -> dict:
    return {"i": index, "role": role, "bytes": sum(row.bytes.values()), "tokens": sum(row.tokens.values()),
            "slices": dict(row.bytes), "digest": message_digest(source)}
