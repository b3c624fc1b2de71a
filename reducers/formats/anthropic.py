"""The `anthropic` format: Messages API request bodies and message lists.

Accepted shapes, per record (a JSONL line, or the whole .json document):
- a request body {"system"?, "messages": [...], "tools"?, "response"?, ...}:
  one conversation per body; `response` is its final assistant message;
- an array of messages: one conversation;
- a single message {"role", "content"}: all such lines form ONE conversation;
- a Message Batches line: a request {"custom_id", "params": <request body>}
  or a result {"custom_id", "result": {"type": "succeeded", "message"} |
  {"type": "errored", "error"} | {"type": "canceled" | "expired"}}.
  `custom_id` names the conversation (its session id, as `id` does for a
  body); a result holds only the reply (or the error) that came back;
- a captured or logged call ({"request": <body>, "response": <Message>}),
  read by reducers.formats.http_capture;
- a JSON array of request bodies or logged calls: one conversation each.

Content is a string or a list of blocks. Text blocks of one message become
one draft (joined by a blank line) until a block of another kind breaks the
run: thinking, tool_use, tool_result. A user message holding only
tool_result blocks answers the previous turn; it does not start a new one."""
from __future__ import annotations

import re
from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, counted
from reducers.formats.claude_ai_export import is_export, parse_export
from reducers.formats.http_capture import Threads, captured_at, exchange_body, message_digest, other_traffic, record_list, traffic_draft
from reducers.formats.common import (Conversation, api_error_text, call_origin, conversation_session_id, error_draft, failure_text,
                                     flatten_content, media_blocks, one_message, to_utc_iso, tool_call_text)

NAME = "anthropic"
PREFIX = "an"
ROLES = ("user", "assistant", "system")
_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
_MARKER_BLOCKS = _CALL_BLOCKS + _THINKING_BLOCKS + ("compaction", "search_result", "container_upload")
_SOURCED_BLOCKS = ("image", "document")             # {"type", "source": {...}}: Chat Completions says image_url / file
_ID_KEYS = ("id", "session_id", "conversation_id")
_TS_KEYS = ("timestamp", "created_at", "created")
_SERVER_TOOL_TYPE = re.compile(r"_\d{8}$")         # web_search_20250305, bash_20250124...
_BATCH_RESULTS = ("succeeded", "errored", "canceled", "expired")


def _cites(block: Any) -> bool:
    """A text block that quotes its sources (`citations` a list); a
    document's `citations` is only the setting that allows them."""
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("citations"), list) \
        and bool(block["citations"])


def _is_result_block(btype: Any) -> bool:
    # tool_result, web_search_tool_result, code_execution_tool_result, mcp_tool_result...
    return isinstance(btype, str) and btype.endswith("tool_result")


# ---------------------------------------------------------------- sniff

def foreign_record(rec: Any) -> bool:
    """Records of the line-oriented agent formats: Claude Code lines (their
    `message` holds Anthropic blocks too), Codex rollout items, trace events.
    Neither chat format may claim them."""
    if not isinstance(rec, dict):
        return False
    return ("sessionId" in rec or ("seq" in rec and "hash" in rec)
            or ("type" in rec and any(k in rec for k in ("payload", "message", "summary", "snapshot"))))


def _blocks(msg: dict) -> list:
    content = msg.get("content")
    return content if isinstance(content, list) else []


def _has_markers(msgs: list) -> bool:
    """Content blocks only the Messages API uses, or a whole Message object
    as the API returns it ({"type": "message", "role", "content"})."""
    for m in msgs:
        if not isinstance(m, dict):
            continue
        if m.get("type") == "message":
            return True
        for b in _blocks(m):
            if isinstance(b, dict) and (b.get("type") in _MARKER_BLOCKS or _is_result_block(b.get("type"))
                                        or (b.get("type") in _SOURCED_BLOCKS and isinstance(b.get("source"), dict))):
                return True
    return False


def _has_openai_signals(msgs: list) -> bool:
    # Only a message (a role that is a string) signals: a record like
    # {"role": null, "tool_calls": null} is no OpenAI message, and must not
    # turn a whole file of plain chat into OpenAI's.
    return any(isinstance(m, dict) and isinstance(m.get("role"), str)
               and (m.get("role") in ("tool", "function", "developer", "ipython")
                    or "tool_calls" in m or "tool_call_id" in m or "function_call" in m
                    or "toolCalls" in m or "toolCallId" in m)     # camelCase: Mistral's clients
               for m in msgs)


def batch_request(rec: Any) -> dict | None:
    """The Messages request body of a Message Batches request line."""
    if isinstance(rec, dict) and "custom_id" in rec and isinstance(rec.get("params"), dict) \
            and isinstance(rec["params"].get("messages"), list):
        return rec["params"]
    return None


def is_batch_result(rec: Any) -> bool:
    """A line of a Message Batches results file."""
    return (isinstance(rec, dict) and "custom_id" in rec and isinstance(rec.get("result"), dict)
            and rec["result"].get("type") in _BATCH_RESULTS)


def _is_role_message(m: Any) -> bool:
    return isinstance(m, dict) and m.get("role") in ROLES and "content" in m


def _body_dialect(rec: dict) -> str | None:
    """'anthropic' or 'openai' when a request body says which API it was sent
    to beside its messages: the tool definitions (Messages API tools carry
    `input_schema`; Chat Completions tools wrap a `function`), a Bedrock or
    Vertex `anthropic_version`, or the shape of a saved response. A first
    request has no tool blocks yet, so its messages alone cannot tell."""
    response = rec.get("response")
    if isinstance(response, dict):
        if isinstance(response.get("choices"), list):
            return "openai"
        if response.get("type") in ("message", "error"):
            return "anthropic"
    if isinstance(rec.get("functions"), list):
        return "openai"
    tools = [t for t in rec["tools"] if isinstance(t, dict)] if isinstance(rec.get("tools"), list) else []
    if any(t.get("type") in ("function", "custom") and isinstance(t.get(t["type"]), dict) for t in tools):
        return "openai"
    if ("anthropic_version" in rec or "mcp_servers" in rec
            or any("input_schema" in t or _SERVER_TOOL_TYPE.search(str(t.get("type", ""))) for t in tools)):
        return "anthropic"
    return None


def chat_kind(rec: Any) -> str:
    """One record's reading: 'anthropic' (specific markers), 'neutral'
    (plain role/content data either chat format could read), 'openai',
    'foreign' or 'other'."""
    if foreign_record(rec):
        return "foreign"
    if is_export(rec):                              # Claude.ai's conversations.json
        return "anthropic"
    exchange = exchange_body(rec)
    if exchange is not None:                        # a captured call: what it sent decides
        return chat_kind(exchange)
    # Message Batches lines: only the Messages API has them (OpenAI's Batch API says `body`).
    if batch_request(rec) is not None:
        return "anthropic" if any(_is_role_message(m) for m in rec["params"]["messages"]) else "other"
    if is_batch_result(rec):
        return "anthropic"
    # Every message is looked at: a long chat may reach its first tool use late.
    if isinstance(rec, dict) and isinstance(rec.get("messages"), list):
        msgs = rec["messages"]
        response = rec.get("response")
        if _has_openai_signals(msgs) or (isinstance(response, dict) and _has_openai_signals([response])):
            return "openai"
        if _has_markers(msgs + ([response] if isinstance(response, dict) else [])):
            return "anthropic"
        if not any(_is_role_message(m) for m in msgs):
            return "other"
        dialect = _body_dialect(rec)
        if dialect:
            return dialect
        # A top-level system prompt beside the messages is the Messages API layout
        # (Chat Completions carries it as a role "system" message instead).
        has_system = bool(flatten_content(rec.get("system")))
        if has_system and not any(isinstance(m, dict) and m.get("role") == "system" for m in msgs):
            return "anthropic"
        return "neutral"
    if record_list(rec):                            # an array of conversations: what they hold decides
        kinds = {chat_kind(r) for r in rec}
        return next((k for k in ("foreign", "openai", "anthropic", "neutral") if k in kinds), "other")
    if isinstance(rec, list):
        msgs = rec
        if _has_openai_signals(msgs):
            return "openai"
        if _has_markers(msgs):
            return "anthropic"
        return "neutral" if any(_is_role_message(m) for m in msgs) else "other"
    if isinstance(rec, dict) and "role" in rec:
        if _has_openai_signals([rec]):
            return "openai"
        if _has_markers([rec]):
            return "anthropic"
        return "neutral" if _is_role_message(rec) else "other"
    return "other"


def plain_chat(samples: list) -> bool:
    """One role/content message per record, with nothing only one of the
    chat APIs uses. (A record that is a whole conversation shows all its
    messages at once: a sample of those is enough.)"""
    return bool(samples) and all(_is_role_message(s) and chat_kind(s) == "neutral" for s in samples)


def api_marks(samples: list) -> set[str]:
    """Which chat API's own marks these records carry ('openai',
    'anthropic'); empty for plain role/content data either could read."""
    return {k for k in map(chat_kind, samples) if k in ("openai", "anthropic")}


def sniff(samples: list) -> bool:
    kinds = [chat_kind(s) for s in samples]
    if not kinds or "foreign" in kinds or "openai" in kinds or "anthropic" not in kinds:
        return False
    ours = sum(1 for k in kinds if k in ("anthropic", "neutral"))
    return 2 * ours >= len(kinds)


# ---------------------------------------------------------------- parse

class _Parser:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.conversations = 0
        self.loose: Conversation | None = None     # the stream of one-message-per-line records
        self.call_names: dict[str, str] = {}        # tool_use id -> tool name, for results
        self.threads = Threads()                    # conversations captured calls continue
        self.last_call: Conversation | None = None  # of the latest captured call: where other traffic goes

    def open(self, source_id: Any, opening: Any) -> Conversation:
        index = self.conversations
        self.conversations += 1
        return Conversation(PREFIX, conversation_session_id(self.ctx, index, source_id, opening), index)

    def record(self, line: int, rec: Any) -> Iterator[Draft | BadRecord]:
        if is_export(rec):
            yield from parse_export(rec, line, self.ctx)
            return
        if record_list(rec):
            for item in rec:
                yield from self.record(line, item)
        elif isinstance(rec, list):
            if not rec:
                yield BadRecord(line, "empty message list")
                return
            conv = self.open(None, rec[0])
            for i, msg in enumerate(rec):
                yield from one_message(line, i, self.message(line, msg, conv))
        elif isinstance(rec, dict) and "role" in rec:
            if self.loose is None:
                self.loose = self.open(None, rec)
            yield from self.message(line, rec, self.loose)
        elif isinstance(rec, dict) and isinstance(rec.get("messages"), list):
            if "model" in rec:          # a request body: a later one of the same agent resends its history
                yield from self.exchange(line, rec)
            else:
                yield from self.body(line, rec)
        elif (exchange := exchange_body(rec)) is not None and isinstance(exchange.get("messages"), list):
            yield from captured_at(self.exchange(line, exchange), rec, exchange)
        elif batch_request(rec) is not None:
            yield from self.body(line, rec["params"], rec["custom_id"])
        elif is_batch_result(rec):
            yield from self.batch_result(line, rec)
        elif (traffic := other_traffic(rec)) is not None:
            self.last_call = self.last_call or self.open(None, rec)
            yield traffic_draft(self.last_call, rec, traffic, line)
        else:
            yield BadRecord(line, "not an Anthropic Messages record (no role or messages)")

    def exchange(self, line: int, body: dict) -> Iterator[Draft | BadRecord]:
        """A captured call: only what it adds to the conversation it continues."""
        msgs = body["messages"]
        digests = [message_digest(m.get("role"), m.get("content")) if isinstance(m, dict) else 0 for m in msgs]
        found = self.threads.continued(digests)
        conv, read = found if found is not None else (self.open(_body_id(body), msgs[0] if msgs else body), 0)
        self.last_call = conv
        yield from self.body(line, body, conv=conv, skip=read)
        response = body.get("response")
        if isinstance(response, dict) and isinstance(response.get("content"), (str, list)):
            digests.append(message_digest("assistant", response["content"]))
        self.threads.remember(conv, digests)

    def body(self, line: int, rec: dict, source_id: Any = None, conv: Conversation | None = None,
             skip: int = 0) -> Iterator[Draft | BadRecord]:
        """A request body (and its saved reply). `conv` and `skip`: a captured
        call continuing a conversation whose first `skip` messages are read;
        its messages are then numbered by their place in the history."""
        msgs = rec["messages"]
        if conv is None:
            conv = self.open(_body_id(rec) if source_id is None else source_id, msgs[0] if msgs else rec)
        system = rec.get("system")
        text = ("\n\n".join(t for t in (flatten_content(b) for b in system) if t) if isinstance(system, list)
                else flatten_content(system))
        if text and not skip:
            conv.begin(system)
            yield Draft(kind="system", text=text, session_id=conv.session_id, key=conv.key("system", 0),
                        turn_id=conv.turn(), line=line)
        for i, msg in enumerate(msgs[skip:], skip):
            yield from one_message(line, i, self.message(line, msg, conv, i if skip else None))
        response = rec.get("response")
        if response is None:
            return
        if isinstance(response, dict) and response.get("error") and "content" not in response:
            # The request failed ({"type": "error", "error": {...}}, an overloaded
            # API, or what a call log wrote instead): the error, kept as a system event.
            yield error_draft(conv, response, failure_text(response["error"]), line)
            return
        if not (isinstance(response, dict) and response.get("role", "assistant") == "assistant"
                and isinstance(response.get("content"), (str, list))):
            yield BadRecord(line, "response is not an assistant message")
            return
        model = response.get("model") or rec.get("model")
        extra = {"model": model} if isinstance(model, str) else None
        # in a continued conversation the reply has its place in the history the next call repeats
        yield from one_message(line, "response", self.message(line, {"role": "assistant", **response}, conv,
                                                              len(msgs) if skip else "response", extra))

    def batch_result(self, line: int, rec: dict) -> Iterator[Draft | BadRecord]:
        """What came back for one batch request: the reply, or why there is none."""
        result = rec["result"]
        rtype = result["type"]
        conv = self.open(rec["custom_id"], result)
        message = result.get("message")
        if rtype == "succeeded":
            if not (isinstance(message, dict) and isinstance(message.get("content"), (str, list))):
                yield BadRecord(line, "succeeded batch result holds no message")
                return
            model = message.get("model")
            extra = {"model": model} if isinstance(model, str) else None
            yield from self.message(line, {"role": "assistant", **message}, conv, "response", extra)
            return
        error = result.get("error")
        if isinstance(error, dict) and isinstance(error.get("error"), dict):
            error = error["error"]                  # an error response {"type": "error", "error": {...}}
        text = api_error_text(error) if isinstance(error, dict) else f"batch request {rtype}"
        yield error_draft(conv, result, text, line, batch_result=rtype)

    def message(self, line: int, msg: Any, conv: Conversation, index: int | str | None = None,
                extra: dict | None = None) -> Iterator[Draft | BadRecord]:
        index = conv.place(index)
        conv.begin(msg)
        if not isinstance(msg, dict):
            yield BadRecord(line, f"message {index} is not an object")
            return
        role = msg.get("role")
        if role not in ROLES:
            yield BadRecord(line, f"message {index}: unknown role {role!r}")
            return
        kind = {"user": "user", "assistant": "assistant", "system": "system"}[role]
        if extra is None and role == "assistant" and isinstance(msg.get("model"), str):
            extra = {"model": msg["model"]}         # a Message object as the API returned it
        base = dict(session_id=conv.session_id, ts=_ts(msg), line=line,
                    uuid=msg["id"] if isinstance(msg.get("id"), str) else None)
        content = msg.get("content")
        if not isinstance(content, list):
            if role == "user":
                conv.start_turn()
            text = content if isinstance(content, str) else flatten_content(content)   # verbatim
            if text != "":
                yield Draft(kind=kind, text=text, key=conv.key(index, 0), turn_id=conv.turn(), meta=extra, **base)
            return

        run: list[str] = []          # text of adjacent plain blocks, flushed as one draft
        media: list[dict] = []       # ...and the images/documents among them, kept whole
        run_start = 0
        started_turn = False
        cited = [False]              # a reply cut into blocks where its citations fall reads as one text

        def flush() -> Iterator[Draft]:
            if run and any(run):
                joiner = "" if cited[0] else "\n\n"
                yield Draft(kind=kind, text=joiner.join(t for t in run if t != ""), key=conv.key(index, run_start),
                            turn_id=conv.turn(), meta=extra, media=list(media) or None, **base)
            run.clear()
            media.clear()
            cited[0] = False

        for bi, block in enumerate(content):
            btype = block.get("type") if isinstance(block, dict) else None
            if _is_result_block(btype):
                yield from flush()
                yield self.result(block, conv.key(index, bi), conv.turn(), base)
                continue
            if role == "user" and not started_turn:          # real user content: a new turn begins
                conv.start_turn()
                started_turn = True
            if btype == "compaction":               # the summary that stands for earlier turns
                yield from flush()
                yield Draft(kind="system", text=flatten_content(block.get("content")) or "[compaction]", key=conv.key(index, bi),
                            turn_id=conv.turn(), meta={**(extra or {}), "subtype": "compaction"}, **base)
            elif btype in _THINKING_BLOCKS:
                yield from flush()
                redacted = btype == "redacted_thinking"
                thought = "[redacted]" if redacted else str(block.get("thinking") or "")
                if not thought:
                    continue                          # a signature with no text: nothing was thought aloud
                yield Draft(kind="assistant", text=f"<thinking>\n{thought}\n</thinking>", key=conv.key(index, bi),
                            turn_id=conv.turn(), meta={**(extra or {}), "thinking": True, **({"redacted": True} if redacted else {})},
                            **base)
            elif btype in _CALL_BLOCKS:
                yield from flush()
                yield self.call(block, btype, conv.key(index, bi), conv.turn(), base, extra)
            else:
                if not run:
                    run_start = bi
                if _cites(block):
                    cited[0] = True
                run.append(_block_text(block))
                media.extend(media_blocks(block))
        yield from flush()

    def call(self, block: dict, btype: str, key: str, turn: str, base: dict, extra: dict | None) -> Draft:
        name = block.get("name") if isinstance(block.get("name"), str) else None
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        if call_id and name:
            self.call_names[call_id] = name
        meta = {**(extra or {}), **({"block": btype} if btype != "tool_use" else {}), **call_origin(block)} or None
        return Draft(kind="tool_call", text=tool_call_text(name, block.get("input")),
                     tool={"name": name, "call_id": call_id, "input": block.get("input")},
                     key=key, turn_id=turn, meta=meta, **base)

    def result(self, block: dict, key: str, turn: str, base: dict) -> Draft:
        call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
        content = block.get("content")
        is_error = bool(block.get("is_error"))
        meta = {"block": block["type"]} if block.get("type") != "tool_result" else None
        if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
            is_error = True                       # server tools report failure in the content
            text = f"error: {content.get('error_code', content.get('type'))}"
            if isinstance(content.get("error_message"), str) and content["error_message"]:
                text += f": {content['error_message']}"
        elif isinstance(content, dict) and any(isinstance(content.get(k), str)
                                               for k in ("stdout", "stderr", "encrypted_stdout")):
            # code_execution / bash_code_execution results: the output is in
            # stdout/stderr (encrypted when the code ran for a server tool),
            # their `content` only lists files written.
            stdout = content.get("stdout", "[encrypted output]" if "encrypted_stdout" in content else None)
            text = "\n".join(t for t in (stdout, content.get("stderr"),
                                         flatten_content(content.get("content"))) if isinstance(t, str) and t)
            code = content.get("return_code")
            if isinstance(code, int) and not isinstance(code, bool):
                meta = {**(meta or {}), "exit_code": code}
                is_error = is_error or code != 0
        elif isinstance(content, list):
            text = "\n".join(_block_text(b) for b in content)
        else:
            text = flatten_content(content)
        return Draft(kind="tool_result", text=text,
                     tool={"name": self.call_names.get(call_id or ""), "call_id": call_id, "is_error": is_error},
                     key=key, turn_id=turn, meta=meta, media=media_blocks(content) or None, **base)


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    parser = _Parser(ctx)
    for line, rec in records:
        # a record whose every message repeats history already read gives nothing: counted as ignored
        yield from counted(parser.record(line, rec), ctx)


# ---------------------------------------------------------------- pieces

def _block_text(block: Any) -> str:
    """One content block as the model saw it; search results as title + url
    (their encrypted page content is not readable text)."""
    if isinstance(block, dict):
        btype = block.get("type")
        if btype == "web_search_result":
            return f"{block.get('title', '')} <{block.get('url', '')}>".strip()
        if btype == "tool_addition" and isinstance(block.get("tool"), dict):
            return f"[tool_addition: {block['tool'].get('name', '')}]"
    return flatten_content([block])


def _body_id(body: dict) -> Any:
    """The id a request body carries for its conversation, if any."""
    return next((body[k] for k in _ID_KEYS if body.get(k)), None)


def _ts(msg: dict) -> str | None:
    return next((to_utc_iso(msg[k]) for k in _TS_KEYS if msg.get(k) is not None), None)
