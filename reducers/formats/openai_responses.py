"""The OpenAI Responses API in the `openai` format: request bodies {"model",
"input": str | [items], "instructions"?, "tools"?, "response"?} and the
response objects {"object": "response", "output": [items]} saved with them.
Items are role messages, tool calls and their outputs (paired by call_id),
reasoning summaries, and calls the API ran itself (their result inside)."""
from __future__ import annotations

from typing import Any, Iterator

from reducers.drafts import BadRecord, Draft
from reducers.formats.common import (Conversation, api_error_text, error_draft, flatten_content, media_blocks, to_utc_iso,
                                     tool_call_text)
from reducers.formats.openai_parts import ID_KEYS, flatten_parts, message_ts, message_uuid, parse_arguments

_RESPONSE_ROLES = ("user", "assistant", "system", "developer")
_CHAINED_RESPONSES = 10_000             # response ids remembered for previous_response_id
_EMBEDDING_KEYS = ("dimensions", "encoding_format")


def is_responses_body(rec: Any) -> bool:
    """A Responses API request body: `input` is a string, or a list of
    items (role messages or typed items). Embedding and moderation requests
    also carry `input` (strings, numbers): they are not conversations."""
    if not isinstance(rec, dict) or any(k in rec for k in ("messages", "history", "role")):
        return False
    inp = rec.get("input")
    if isinstance(inp, str):
        model = rec.get("model")
        return (("model" in rec or "instructions" in rec) and not any(k in rec for k in _EMBEDDING_KEYS)
                and not (isinstance(model, str) and ("embedding" in model or "moderation" in model)))
    return (isinstance(inp, list) and bool(inp) and all(isinstance(i, dict) for i in inp[:50])
            and any(_is_response_item(i) for i in inp[:50]))


def _is_response_item(item: dict) -> bool:
    return (item.get("role") in _RESPONSE_ROLES and "content" in item) or (
        isinstance(item.get("type"), str) and item["type"] != "message")


def is_saved_response(value: Any) -> bool:
    """A Responses API reply saved on its own (an SDK dump, a fixture): marked
    by its `object`, since a bare `output` list says too little alone."""
    return (isinstance(value, dict) and value.get("object") in ("response", "response.compaction")
            and isinstance(value.get("output"), list))


def is_response_object(value: Any) -> bool:
    """A Responses API response ({"object": "response", "output": [items]})."""
    return isinstance(value, dict) and (value.get("object") == "response" or (
        isinstance(value.get("output"), list) and "choices" not in value and "role" not in value))


def reasoning_text(item: dict) -> str:
    """A reasoning item's summary texts, else its raw reasoning text."""
    for field in ("summary", "content"):
        parts = item.get(field)
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"].strip()
                 ] if isinstance(parts, list) else []
        if texts:
            return "\n\n".join(texts)
    return ""


def responses_session(body: dict) -> Any:
    """The id a Responses body carries for its conversation: an id field, or
    the `conversation` it continues ("conv_..." or {"id": ...})."""
    found = next((body[k] for k in ID_KEYS if body.get(k)), None)
    conversation = body.get("conversation")
    if found is None and isinstance(conversation, dict):
        conversation = conversation.get("id")
    return found if found is not None else (conversation if isinstance(conversation, str) and conversation else None)


def responses_opening(body: dict) -> Any:
    inp = body.get("input")
    return inp[0] if isinstance(inp, list) and inp else inp if inp is not None else body



class ResponsesItems:
    """The Responses API half of the openai parser (which supplies `message`
    for role items, `call_names` and `response_sessions`)."""
    call_names: dict[str, str]
    response_sessions: dict[str, str]

    def continued_session(self, body: dict) -> str | None:
        """The session of the response a body continues (`previous_response_id`),
        when this source holds it: a chain of requests is one conversation."""
        previous = body.get("previous_response_id")
        return self.response_sessions.get(previous) if isinstance(previous, str) else None

    def responses_body(self, line: int, body: dict, conv: Conversation) -> Iterator[Draft | BadRecord]:
        instructions = body.get("instructions")
        text = instructions if isinstance(instructions, str) else flatten_content(instructions)
        if text:
            conv.begin(instructions)
            yield Draft(kind="system", text=text, session_id=conv.session_id, key=conv.key("system", 0),
                        turn_id=conv.turn(), line=line, meta={"subtype": "instructions"})
        inp = body.get("input")
        items = [{"role": "user", "content": inp}] if isinstance(inp, str) else inp if isinstance(inp, list) else []
        for item in items:
            yield from self.item(line, item, conv)
        response = body.get("response")
        if response is None:
            return
        if is_response_object(response) or (isinstance(response, dict) and isinstance(response.get("error"), dict)):
            yield from self.response_object(line, response, conv, body.get("model"))
            self.remember_response(response, conv)
        else:
            yield BadRecord(line, "response is not a Responses API response object")

    def remember_response(self, response: dict, conv: Conversation) -> None:
        """A later request or reply naming this response as its previous one continues `conv`."""
        if isinstance(response.get("id"), str):
            if len(self.response_sessions) >= _CHAINED_RESPONSES:
                self.response_sessions.pop(next(iter(self.response_sessions)))
            self.response_sessions[response["id"]] = conv.session_id

    def saved_response(self, line: int, response: dict, conv: Conversation) -> Iterator[Draft | BadRecord]:
        """A reply saved without its request: its output, in the conversation
        of the response it follows when this source holds that one."""
        yield from self.response_object(line, response, conv)
        self.remember_response(response, conv)

    def response_object(self, line: int, response: dict, conv: Conversation, model: Any = None
                        ) -> Iterator[Draft | BadRecord]:
        """What a Responses API call returned: its output items, or its error."""
        model = response.get("model") or model
        extra = {"model": model} if isinstance(model, str) else None
        ts = to_utc_iso(response.get("created_at"))
        if isinstance(response.get("error"), dict):
            yield error_draft(conv, response, api_error_text(response["error"]), line, ts)
        output = response.get("output")
        # /responses/compact answers with the history it kept: messages already in
        # the conversation, not new ones
        kept = response.get("object") == "response.compaction"
        for i, item in enumerate(output if isinstance(output, list) else []):
            if kept and isinstance(item, dict) and item.get("type") in (None, "message"):
                yield self.kept_message(line, item, conv, f"response{i}", ts)
            else:
                yield from self.item(line, item, conv, f"response{i}", extra, ts)

    def kept_message(self, line: int, item: dict, conv: Conversation, index: str, ts: str | None) -> Draft:
        conv.begin(item)
        role = item.get("role") if isinstance(item.get("role"), str) else "unknown"
        return Draft(kind="system", text=flatten_parts(item.get("content")), session_id=conv.session_id,
                     key=conv.key(index, 0), turn_id=conv.turn(), ts=ts, line=line,
                     meta={"subtype": "compaction", "role": role})

    def item(self, line: int, item: Any, conv: Conversation, index: int | str | None = None,
             extra: dict | None = None, ts: str | None = None) -> Iterator[Draft | BadRecord]:
        """One Responses API item: a role message, a tool call or its output,
        reasoning. Calls and outputs pair by `call_id`."""
        index = conv.place(index)
        conv.begin(item)
        if not isinstance(item, dict):
            yield BadRecord(line, f"input item {index} is not an object")
            return
        itype = item.get("type")
        if itype in (None, "message"):
            if item.get("role") not in _RESPONSE_ROLES:
                yield BadRecord(line, f"input item {index}: unknown role {item.get('role')!r}")
                return
            msg = {"created_at": ts, **item} if ts and item.get("role") == "assistant" else item
            yield from self.message(line, msg, conv, index, extra)
            return
        if not isinstance(itype, str):
            yield BadRecord(line, f"input item {index} has neither a role nor a type")
            return
        base = dict(session_id=conv.session_id, turn_id=conv.turn(), ts=message_ts(item) or ts, line=line, uuid=message_uuid(item))
        if itype == "reasoning":
            text = reasoning_text(item)
            if text:                    # encrypted_content alone is not text
                yield Draft(kind="assistant", text=f"<thinking>\n{text}\n</thinking>", key=conv.key(index, 0),
                            meta={**(extra or {}), "thinking": True}, **base)
        elif itype.endswith("_call_output"):
            yield self.item_output(item, itype, conv.key(index, 0), base)
        elif itype.endswith("_call"):
            yield from self.item_call(item, itype, conv, index, base, extra)
        else:                           # item_reference, mcp_list_tools, approvals...: a placeholder
            ref = item.get("id") if itype == "item_reference" and isinstance(item.get("id"), str) else None
            text = f"[{itype}: {ref}]" if ref else f"[{itype}]"
            if itype == "mcp_list_tools" and isinstance(item.get("tools"), list):
                text += _tool_listing(item)
            yield Draft(kind="system", text=text, key=conv.key(index, 0), meta={"item": itype}, **base)

    def item_call(self, item: dict, itype: str, conv: Conversation, index: int | str, base: dict,
                  extra: dict | None) -> Iterator[Draft]:
        name = item.get("name") if isinstance(item.get("name"), str) else itype[:-len("_call")]
        call_id = next((item[k] for k in ("call_id", "id") if isinstance(item.get(k), str) and item[k]), None)
        if call_id:
            self.call_names[call_id] = name
        raw = next((item[k] for k in ("arguments", "input", "action", "code", "queries", "operation") if k in item), None)
        # A custom tool's input is free text (a patch, a query): it stays a string.
        parsed = raw if itype == "custom_tool_call" else parse_arguments(raw)
        meta = {**(extra or {}), **({"item": itype} if itype != "function_call" else {})}
        for k in ("namespace", "server_label"):
            if isinstance(item.get(k), str) and item[k]:
                meta[k] = item[k]
        yield Draft(kind="tool_call", text=tool_call_text(name, raw), tool={"name": name, "call_id": call_id,
                                                                             "input": parsed},
                    key=conv.key(index, 0), meta=meta or None, **base)
        # Calls the API ran itself carry their result in the same item.
        failed = item.get("status") == "failed" or bool(item.get("error"))
        if itype == "image_generation_call":
            text, media = "[image]", ([item] if item.get("result") else None)
        elif item.get("output") is not None or item.get("error"):     # mcp_call (null while pending)
            out = item.get("output") if item.get("output") is not None else item.get("error")
            text, media = (out if isinstance(out, str) else flatten_parts(out)), (media_blocks(out) or None)
        elif isinstance(item.get("outputs"), list):          # code_interpreter_call: logs and images
            text = "\n".join(o["logs"] if isinstance(o, dict) and isinstance(o.get("logs"), str) else flatten_content([o])
                             for o in item["outputs"])
            media = None
        elif isinstance(item.get("results"), list):          # file_search_call: the passages it found
            text, media = "\n\n".join(_search_hit(r) for r in item["results"]), None
        else:
            return
        yield Draft(kind="tool_result", text=text, tool={"name": name, "call_id": call_id, "is_error": failed},
                    key=conv.key(index, 1), meta={"item": itype}, media=media, **base)

    def item_output(self, item: dict, itype: str, key: str, base: dict) -> Draft:
        # local_shell_call_output names its call by `id`; the others by `call_id`.
        call_id = next((item[k] for k in ("call_id", "id") if isinstance(item.get(k), str) and item[k]), None)
        output = item.get("output")
        screenshot = isinstance(output, dict) and output.get("type") == "computer_screenshot"
        if isinstance(output, str):
            text = output                                   # verbatim: the model saw this very string
        else:
            text = "[image]" if screenshot else flatten_parts(output)
        meta = {"item": itype} if itype != "function_call_output" else None
        media = [output] if screenshot else media_blocks(output)
        return Draft(kind="tool_result", text=text,
                     tool={"name": self.call_names.get(call_id or ""), "call_id": call_id,
                           "is_error": item.get("status") == "failed"},
                     key=key, meta=meta, media=media or None, **base)


def _search_hit(hit: Any) -> str:
    """One file_search result: the file it is from, then its text."""
    if not isinstance(hit, dict):
        return flatten_content(hit)
    name = next((hit[k] for k in ("filename", "file_id") if isinstance(hit.get(k), str) and hit[k]), "")
    text = hit.get("text") if isinstance(hit.get("text"), str) else ""
    return f"[{name}]\n{text}" if name else text


def _tool_listing(item: dict) -> str:
    """The tools an MCP server offered: `server: name - description` lines."""
    server = item.get("server_label") if isinstance(item.get("server_label"), str) else ""
    lines = [f"{server}: {t.get('name')}" + (f" - {t['description']}" if isinstance(t.get("description"), str) else "")
             for t in item["tools"] if isinstance(t, dict)]
    return "".join("\n" + line for line in lines)
