"""Captured API traffic: one record per HTTP exchange, as proxies that log an
agent's calls write it (claude-trace: {"request": {"url", "method",
"headers", "body"}, "response": {"status", "headers", "body" | "body_raw"}}).

The request body is a Messages API, Chat Completions or Responses API
request (a JSON object, or the JSON string a proxy logged); the reply is
the response body or, for a streamed call, its server-sent events put
back together (reducers/formats/openai_stream.py for OpenAI's).
An agent sends its whole history with every call, so a request that
repeats an earlier exchange's messages and reply continues that
conversation (`Threads`): each message is read once. Other traffic in the
capture (telemetry, auth) is kept as it was sent, as a system event."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from reducers.drafts import Draft
from reducers.formats.common import Conversation, compact_json, sorted_json, to_utc_iso
from reducers.formats.openai_responses import is_responses_body
from reducers.formats.openai_stream import rebuilt_reply

_THREADS = 64                        # conversations a later request may continue


def exchange_body(rec: Any) -> dict | None:
    """The request body of a captured exchange, with its reply as
    `response`, when the request holds a conversation (Chat Completions or
    Messages `messages`, or a Responses API `input`). Two layouts: an
    HTTP capture ({"request": {"body"}, "response": {"body" | "body_raw"}})
    and an application's call log, which keeps the bodies themselves
    ({"request": <body>, "response": <reply>})."""
    if not isinstance(rec, dict):
        return None
    request = rec.get("request")
    if not isinstance(request, dict):
        return None
    logged = "body" not in request
    body = request if logged else json_body(request.get("body"))
    if not (isinstance(body, dict) and (isinstance(body.get("messages"), list) or is_responses_body(body))):
        return None
    response = rec.get("response")
    reply = None
    if isinstance(response, dict):
        answer = json_body(response.get("body"))
        if isinstance(answer, dict):
            reply = answer
        elif isinstance(answer, str) and "data:" in answer:
            reply = streamed_message(answer)
        elif isinstance(response.get("body_raw"), str):
            reply = streamed_message(response["body_raw"])
        elif logged:
            reply = response
    if reply is None and logged and rec.get("error") is not None:
        reply = {"error": rec["error"]}           # the call failed: what the log says instead
    return {**body, "response": reply} if reply is not None else dict(body)


def captured_at(drafts, rec: dict, exchange: dict):
    """The drafts of a captured call, dated by the capture when their
    messages carry no time of their own: the reply when the response was
    logged, the rest when the request was sent (claude-trace and other
    proxies log both)."""
    request, response = rec.get("request"), rec.get("response")
    sent = rec.get("timestamp") or (request.get("timestamp") if isinstance(request, dict) else None)
    received = response.get("timestamp") if isinstance(response, dict) else None
    reply = exchange.get("response")
    reply_id = reply.get("id") if isinstance(reply, dict) else None
    for d in drafts:
        if isinstance(d, Draft) and d.ts is None:
            when = received if (received is not None and reply_id and d.uuid == reply_id) else sent
            d.ts = to_utc_iso(when) if when is not None else None
        yield d


def json_body(body: Any) -> Any:
    """A captured body as JSON: proxies that log the bytes on the wire
    keep it as a string (mitmproxy dumps, LiteLLM and Helicone logs); a
    string that is no JSON object stays as it was."""
    if isinstance(body, str) and body.lstrip()[:1] == "{":
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return body
    return body


def other_traffic(rec: Any) -> str | None:
    """An exchange of an HTTP capture that is no model call, as one line
    (method, URL, status) and the body it sent; None for anything else."""
    if not isinstance(rec, dict) or not isinstance(request := rec.get("request"), dict):
        return None
    if not (isinstance(request.get("url"), str) and "body" in request):
        return None
    response = rec.get("response")
    status = next((response[k] for k in ("status", "status_code") if k in response), None) \
        if isinstance(response, dict) else None
    head = " ".join(str(x) for x in (request.get("method"), request["url"]) if x)
    head += f" -> {status}" if status is not None else ""
    body = request["body"]
    if body in (None, "", {}, []):
        return head
    return f"{head}\n{body if isinstance(body, str) else compact_json(body)}"


def traffic_draft(conv: Conversation, rec: dict, text: str, line: int) -> Draft:
    """`other_traffic` in the conversation the capture was in."""
    conv.begin(rec)
    ts = rec.get("timestamp") or rec["request"].get("timestamp")
    return Draft(kind="system", text=text, session_id=conv.session_id, key=conv.key("http", 0),
                 turn_id=conv.turn(), ts=to_utc_iso(ts), line=line, meta={"subtype": "http_exchange"})


def record_list(rec: Any) -> bool:
    """A JSON array of whole conversations (request bodies, `{"messages"}`
    records, logged exchanges), not of the messages of one conversation."""
    return (isinstance(rec, list) and bool(rec)
            and all(isinstance(r, dict) and "role" not in r
                    and (isinstance(r.get("messages"), list) or exchange_body(r) is not None) for r in rec))


def _stream_events(raw: str) -> list:
    """The decoded `data:` payloads of server-sent events. Lines end at
    "\n" only: a JSON payload may hold U+2028 and the like unescaped."""
    events = []
    for line in raw.split("\n"):
        if line.startswith("data:"):
            try:
                events.append(orjson.loads(line[5:].strip()))
            except orjson.JSONDecodeError:
                continue
    return events


def streamed_message(raw: str) -> dict | None:
    """A reply rebuilt from its server-sent events: a Messages API stream
    (message_start, content_block_start/delta/stop, message_delta), else
    an OpenAI one (reducers/formats/openai_stream.py)."""
    events = _stream_events(raw)
    message: dict | None = None
    blocks: dict[int, dict] = {}
    partial: dict[int, str] = {}                    # tool input arrives as JSON in pieces
    for event in events:
        etype = event.get("type") if isinstance(event, dict) else None
        if etype == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
        elif etype == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[event.get("index", len(blocks))] = dict(event["content_block"])
        elif etype == "content_block_delta" and isinstance(event.get("delta"), dict):
            _apply_delta(blocks.setdefault(event.get("index", 0), {}), event["delta"], partial, event.get("index", 0))
        elif etype == "content_block_stop":
            index = event.get("index", 0)
            if index in partial and index in blocks:
                pieces = partial.pop(index)
                try:
                    blocks[index]["input"] = orjson.loads(pieces or "{}")
                except orjson.JSONDecodeError:
                    blocks[index]["input"] = pieces          # cut off or broken: kept as sent
        elif etype == "message_delta" and message is not None and isinstance(event.get("delta"), dict):
            message.update({k: v for k, v in event["delta"].items() if v is not None})
        elif etype == "error" and isinstance(event.get("error"), dict):
            return {"type": "error", "error": event["error"]}
    if message is None:
        return rebuilt_reply(events)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _apply_delta(block: dict, delta: dict, partial: dict[int, str], index: int) -> None:
    dtype = delta.get("type")
    if dtype == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif dtype == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif dtype == "input_json_delta":
        partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
    elif dtype == "citations_delta" and isinstance(delta.get("citation"), dict):
        block.setdefault("citations", []).append(delta["citation"])
    # signature_delta: no text


def message_digest(role: Any, content: Any, *more: Any) -> int:
    """A message as a later request repeats it: the cache_control marks an
    agent moves from message to message do not count, nor whether an empty
    content is sent as "", [] or null, and a tool call is its id (clients
    resend it under their own tool name, without the reply's extra fields).
    `more`: what else tells two messages apart (OpenAI's tool-call ids).
    Compared within one parse only, so a plain hash will do (no sha256:
    every message of every logged call is digested)."""
    if not content:
        content = None
    elif isinstance(content, list):
        content = [_as_resent(b) if isinstance(b, dict) else b for b in content]
    return hash(sorted_json([role, content, *more]))


def _as_resent(block: dict) -> dict:
    if str(block.get("type", "")).endswith("tool_use") and block.get("id"):
        return {"type": "tool_use", "id": block["id"]}
    return {k: v for k, v in block.items() if k != "cache_control"}


class Threads:
    """The recent conversations of captured exchanges, by the digests of the
    messages (and replies) read so far."""

    def __init__(self) -> None:
        self._recent: OrderedDict[int, tuple[list[int], Conversation]] = OrderedDict()

    def continued(self, digests: list[int]) -> tuple[Conversation, int] | None:
        """(the conversation, messages already read) that these messages extend."""
        best = None
        for key, (seen, conv) in self._recent.items():
            if len(seen) <= len(digests) and digests[:len(seen)] == seen and (best is None or len(seen) > best[2]):
                best = (key, conv, len(seen))
        if best is None:
            return None
        self._recent.move_to_end(best[0])
        return best[1], best[2]

    def remember(self, conv: Conversation, digests: list[int]) -> None:
        self._recent[conv.index] = (digests, conv)
        self._recent.move_to_end(conv.index)
        if len(self._recent) > _THREADS:
            self._recent.popitem(last=False)
