"""The `openai` format: role-based chat messages (Chat Completions).

Accepted shapes, per record (a JSONL line, or the whole .json document):
- a message {"role", "content", ...}: all such lines form ONE conversation;
- an array of messages: one conversation;
- {"messages": [...]} (the fine-tuning layout) or a request body {"model",
  "messages", "tools", ...}: one conversation per record; a `response` (an
  assistant message or a whole chat.completion) is its final assistant event;
- a trajectory {"history": [...]} (SWE-agent): one conversation.

Conversations are numbered by position in the file; that number is part of
every key and turn id, so conversations that share a session id (--session,
or the same id in the data) never collide."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import orjson

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic as _anthropic
from reducers.formats.common import (Conversation, conversation_session_id, flatten_content, media_blocks, to_utc_iso,
                                     tool_call_text)

NAME = "openai"
PREFIX = "oa"
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_CONVERSATION_KEYS = ("messages", "history")
_ID_KEYS = ("id", "session_id", "conversation_id")
_TS_KEYS = ("timestamp", "created_at", "created")
_REASONING_KEYS = ("reasoning_content", "reasoning", "thought")


# ---------------------------------------------------------------- sniff

def is_message(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("role") in ROLES
            and any(k in value for k in ("content", "tool_calls", "function_call")))


def _conversation_list(rec: dict) -> list | None:
    for k in _CONVERSATION_KEYS:
        if isinstance(rec.get(k), list):
            return rec[k]
    return None


def _is_mine(rec: Any) -> bool:
    if isinstance(rec, list):
        return any(is_message(m) for m in rec[:50])
    if not isinstance(rec, dict):
        return False
    if "role" in rec:
        return is_message(rec)
    msgs = _conversation_list(rec)
    return msgs is not None and any(is_message(m) for m in msgs[:50])


def sniff(samples: list) -> bool:
    if not samples or any(_anthropic.foreign_record(s) for s in samples):
        return False
    mine = sum(1 for s in samples if _is_mine(s))
    # Anthropic-specific data (content blocks, a top-level system) is tried
    # first and must not be claimed twice.
    return mine > 0 and 2 * mine >= len(samples) and not _anthropic.sniff(samples)


# ---------------------------------------------------------------- parse

class _Parser:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.conversations = 0
        self.loose: Conversation | None = None     # the stream of one-message-per-line records
        self.call_names: dict[str, str] = {}        # call id -> tool name, for results that lack it

    def open(self, source_id: Any, opening: Any) -> Conversation:
        index = self.conversations
        self.conversations += 1
        return Conversation(PREFIX, conversation_session_id(self.ctx, index, source_id, opening), index)

    def record(self, line: int, rec: Any) -> Iterator[Draft | BadRecord]:
        if isinstance(rec, list):
            if not rec:
                yield BadRecord(line, "empty message list")
                return
            yield from self.conversation(line, rec, self.open(None, rec[0]))
        elif isinstance(rec, dict) and "role" in rec:
            if self.loose is None:
                self.loose = self.open(None, rec)
            yield from self.message(line, rec, self.loose)
        elif isinstance(rec, dict) and _conversation_list(rec) is not None:
            msgs = _conversation_list(rec)
            conv = self.open(next((rec[k] for k in _ID_KEYS if rec.get(k)), None), msgs[0] if msgs else rec)
            yield from self.conversation(line, msgs, conv, rec)
        else:
            yield BadRecord(line, "not an OpenAI chat record (no role, messages or history)")

    def conversation(self, line: int, msgs: list, conv: Conversation, body: dict | None = None
                     ) -> Iterator[Draft | BadRecord]:
        body = body or {}
        system = flatten_content(body.get("system"))       # some request recorders keep it beside messages
        if system:
            conv.begin(body.get("system"))
            yield Draft(kind="system", text=system, session_id=conv.session_id, key=conv.key("system", 0),
                        turn_id=conv.turn(), line=line)
        for msg in msgs:
            yield from self.message(line, msg, conv)
        response = body.get("response")
        if response is None:
            return
        if isinstance(response, dict) and isinstance(response.get("error"), dict) and "choices" not in response:
            conv.begin(response)            # the request failed: what came back is the error
            yield Draft(kind="system", text=_anthropic.api_error_text(response["error"]), session_id=conv.session_id,
                        key=conv.key("response", 0), turn_id=conv.turn(), line=line, meta={"subtype": "error"})
            return
        model = body.get("model")
        if isinstance(response, dict) and isinstance(response.get("choices"), list):   # a chat.completion
            model = response.get("model") or model
            ts = response.get("created")
            choice = response["choices"][0] if response["choices"] else None
            response = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(response, dict) and ts is not None:
                response = {"created": ts, **response}
        if not (isinstance(response, dict) and response.get("role", "assistant") == "assistant"):
            yield BadRecord(line, "response is not an assistant message or chat.completion")
            return
        extra = {"model": model} if isinstance(model, str) else None
        conv.begin(response)
        yield from self.assistant(line, response, conv, "response", extra)

    def message(self, line: int, msg: Any, conv: Conversation) -> Iterator[Draft | BadRecord]:
        index = conv.messages
        conv.messages += 1
        conv.begin(msg)
        if not isinstance(msg, dict):
            yield BadRecord(line, f"message {index} is not an object")
            return
        role = msg.get("role")
        if role not in ROLES:
            yield BadRecord(line, f"message {index}: unknown role {role!r}")
            return
        if role == "assistant":
            yield from self.assistant(line, msg, conv, index)
            return
        if role == "user":
            conv.start_turn()
        meta = _meta(msg)
        if role in ("tool", "function"):
            yield self.result(line, msg, conv, index, meta)
            return
        content = msg.get("content")
        text = content if isinstance(content, str) else flatten_parts(content)   # user text stays verbatim
        if text == "":
            return
        if role == "developer":
            meta = {**(meta or {}), "role": "developer"}
        yield Draft(kind="user" if role == "user" else "system", text=text, session_id=conv.session_id,
                    key=conv.key(index, 0), turn_id=conv.turn(), ts=_ts(msg), line=line,
                    uuid=_uuid(msg), meta=meta, media=media_blocks(content) or None)

    def assistant(self, line: int, msg: dict, conv: Conversation, index: int | str,
                  extra: dict | None = None) -> Iterator[Draft]:
        base = dict(session_id=conv.session_id, turn_id=conv.turn(), ts=_ts(msg), line=line, uuid=_uuid(msg))
        meta = {**(_meta(msg) or {}), **(extra or {})} or None
        content = msg.get("content")
        text = content if isinstance(content, str) else flatten_parts(content)
        audio = msg.get("audio")
        if text == "" and isinstance(audio, dict):
            # A spoken reply has no content: a response carries its transcript,
            # later requests only the audio id.
            transcript = audio.get("transcript")
            text = transcript if isinstance(transcript, str) and transcript else "[audio]"
        part = 0
        reasoning = next((msg[k] for k in _REASONING_KEYS if isinstance(msg.get(k), str) and msg[k].strip()), None)
        # SWE-agent repeats the visible content as `thought`: that is not a separate draft.
        if reasoning is not None and reasoning.strip() != text.strip():
            yield Draft(kind="assistant", text=f"<thinking>\n{reasoning}\n</thinking>",
                        key=conv.key(index, part), meta={**(meta or {}), "thinking": True}, **base)
            part += 1
        if text:
            yield Draft(kind="assistant", text=text, key=conv.key(index, part), meta=meta, **base)
            part += 1
        if isinstance(msg.get("refusal"), str) and msg["refusal"]:
            yield Draft(kind="assistant", text=msg["refusal"], key=conv.key(index, part),
                        meta={**(meta or {}), "refusal": True}, **base)
            part += 1
        calls = msg.get("tool_calls") if isinstance(msg.get("tool_calls"), list) else []
        legacy = [msg["function_call"]] if isinstance(msg.get("function_call"), dict) else []
        for call in [*calls, *legacy]:
            yield self.call(call, conv.key(index, part), base, meta)
            part += 1

    def call(self, call: Any, key: str, base: dict, meta: dict | None) -> Draft:
        call = call if isinstance(call, dict) else {}
        # tool_calls[] wrap the function ({"function": {...}}); the legacy function_call is it.
        fn = call.get("function") or call.get("custom") or call
        fn = fn if isinstance(fn, dict) else {}
        name = fn.get("name") if isinstance(fn.get("name"), str) else None
        raw = fn.get("arguments", fn.get("input"))
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        if call_id and name:
            self.call_names[call_id] = name
        return Draft(kind="tool_call", text=tool_call_text(name, raw),
                     tool={"name": name, "call_id": call_id, "input": _parse_arguments(raw)},
                     key=key, meta=meta, **base)

    def result(self, line: int, msg: dict, conv: Conversation, index: int, meta: dict | None) -> Draft:
        call_id = msg.get("tool_call_id")
        ids = msg.get("tool_call_ids")
        if call_id is None and isinstance(ids, list) and ids:        # SWE-agent keeps a list
            call_id = ids[0]
            if len(ids) > 1:
                meta = {**(meta or {}), "tool_call_ids": ids[1:]}
        call_id = call_id if isinstance(call_id, str) else None
        name = msg.get("name") if isinstance(msg.get("name"), str) else self.call_names.get(call_id or "")
        if meta:
            meta.pop("name", None)               # it is the tool's name: it lives in `tool`
        return Draft(kind="tool_result", text=flatten_parts(msg.get("content")),
                     tool={"name": name, "call_id": call_id, "is_error": False},
                     session_id=conv.session_id, key=conv.key(index, 0), turn_id=conv.turn(),
                     ts=_ts(msg), line=line, uuid=_uuid(msg), meta=meta or None,
                     media=media_blocks(msg.get("content")) or None)


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    parser = _Parser(ctx)
    for line, rec in records:
        yield from parser.record(line, rec)


# ---------------------------------------------------------------- pieces

def flatten_parts(content: Any) -> str:
    """Chat Completions content parts: text, image_url, input_audio, file,
    refusal. Binary payloads (base64 audio, file data) become placeholders."""
    if not isinstance(content, list):
        return flatten_content(content)
    parts = []
    for part in content:
        ptype = part.get("type") if isinstance(part, dict) else None
        if ptype == "input_audio":
            parts.append("[audio]")
        elif ptype == "file":
            f = part.get("file") if isinstance(part.get("file"), dict) else {}
            parts.append(f"[document: {f['filename']}]" if isinstance(f.get("filename"), str) else "[document]")
        elif ptype == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(part["refusal"])
        else:
            parts.append(flatten_content([part]))
    return "\n".join(p for p in parts if p != "")


def _parse_arguments(raw: Any) -> Any:
    """Arguments arrive as a JSON string; keep the string when it is not JSON
    (models do emit broken arguments, and that is worth remembering)."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def _meta(msg: dict) -> dict | None:
    meta = {}
    if isinstance(msg.get("name"), str):
        meta["name"] = msg["name"]
    if isinstance(msg.get("message_type"), str):          # SWE-agent: action / observation / ...
        meta["message_type"] = msg["message_type"]
    return meta or None


def _ts(msg: dict) -> str | None:
    return next((to_utc_iso(msg[k]) for k in _TS_KEYS if msg.get(k) is not None), None)


def _uuid(msg: dict) -> str | None:
    return msg["id"] if isinstance(msg.get("id"), str) else None
