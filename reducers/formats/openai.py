"""The `openai` format: role-based chat messages (Chat Completions).

Accepted shapes, per record (a JSONL line, or the whole .json document):
- a message {"role", "content", ...}: all such lines form ONE conversation;
- an array of messages: one conversation;
- {"messages": [...]} (the fine-tuning layout) or a request body {"model",
  "messages", "tools", ...}: one conversation per record; a `response` (an
  assistant message or a whole chat.completion) is its final assistant event;
- a trajectory {"history": [...]} (SWE-agent): one conversation;
- a Responses API request body {"model", "input": str | [items],
  "instructions"?, "tools"?, "response"?}: one conversation per record;
  items are role messages, function/custom tool calls and their outputs
  (paired by call_id), reasoning summaries; a saved `response` object
  ({"object": "response", "output": [items]}) adds the model's output items;
- a Batch API line: an input line {"custom_id", "method", "url", "body"}
  holds one of the request bodies above, an output line {"custom_id",
  "response": {"status_code", "body"}, "error"} the chat.completion or
  response object (or the error) that came back. `custom_id` names the
  conversation (its session id, as `id` does for a body);
- a logged call {"request": <body>, "response": <chat.completion>} (or
  an HTTP capture of one): calls that resend an earlier call's history and
  reply continue that conversation, so each message is read once; an
  `error` logged beside the messages is kept as an error event;
- a chat.completion saved on its own: its reply;
- a JSON array of any of the conversation records above.
Mistral's clients write `toolCalls` / `toolCallId`: read as tool_calls /
tool_call_id. Responses API items are read by reducers.formats.openai_responses,
which record is which is told by reducers.formats.openai_shapes.

Conversations are numbered by position in the file; that number is part of
every key and turn id, so conversations that share a session id (--session,
or the same id in the data) never collide."""
from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, counted
from reducers.formats import anthropic as _anthropic
from reducers.formats.chatgpt_export import is_export, parse_export
from reducers.formats.http_capture import Threads, captured_at, exchange_body, message_digest, other_traffic, traffic_draft
from reducers.formats.common import (Conversation, conversation_session_id, error_draft, failure_text, flatten_content,
                                     media_blocks, one_message, tool_call_text)
from reducers.formats.openai_parts import ID_KEYS, flatten_parts, message_ts, message_uuid, parse_arguments
from reducers.formats.openai_responses import (ResponsesItems, is_response_object, is_responses_body, is_saved_response,
                                               responses_opening, responses_session)
from reducers.formats.openai_shapes import (ROLES, batch_request_body, conversation_list, envelope_reply, is_batch_output,
                                            is_completion, is_mine, record_array, simulations)
from reducers.formats.swe_agent import TrajectoryParts, is_mini_trajectory, is_observation, returncode, submission

NAME = "openai"
PREFIX = "oa"
_REASONING_KEYS = ("reasoning_content", "reasoning", "thought")


# ---------------------------------------------------------------- sniff

def sniff(samples: list) -> bool:
    if not samples or any(_anthropic.foreign_record(s) for s in samples):
        return False
    mine = sum(1 for s in samples if is_mine(s))
    # Anthropic-specific data (content blocks, a top-level system) is tried
    # first and must not be claimed twice.
    return mine > 0 and 2 * mine >= len(samples) and not _anthropic.sniff(samples)


# ---------------------------------------------------------------- parse

class _Parser(ResponsesItems, TrajectoryParts):
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.conversations = 0
        self.loose: Conversation | None = None     # the stream of one-message-per-line records
        self.call_names: dict[str, str] = {}        # call id -> tool name, for results that lack it
        self.response_sessions: dict[str, str] = {}  # Responses API response id -> its session
        self.idless_calls: deque[str] = deque(maxlen=1000)   # calls without ids, awaiting results in order
        self.open_action: tuple[str, str] | None = None   # SWE-agent: (call id, name) awaiting its output
        self.bash_actions = False                   # mini-swe-agent's text layout: bash blocks are calls
        self.exited = False                         # mini-swe-agent's `exit` message held the submission
        self.threads = Threads()                    # conversations logged calls continue
        self.last_call: Conversation | None = None  # of the latest logged call: where other traffic goes

    def open(self, source_id: Any, opening: Any, session_id: str | None = None) -> Conversation:
        """The next conversation; `session_id` continues a session already open."""
        index = self.conversations
        self.conversations += 1
        self.open_action, self.bash_actions, self.exited = None, False, False
        self.idless_calls.clear()
        if session_id is None or self.ctx.session:
            session_id = conversation_session_id(self.ctx, index, source_id, opening)
        return Conversation(PREFIX, session_id, index)

    def record(self, line: int, rec: Any) -> Iterator[Draft | BadRecord]:
        if is_export(rec):                                  # ChatGPT's conversations.json: message trees
            yield from parse_export(rec, line, self.ctx)
            return
        if record_array(rec):                               # an array of conversations or replies
            for item in rec:
                yield from self.record(line, item)
        elif isinstance(rec, list):
            if not rec:
                yield BadRecord(line, "empty message list")
                return
            yield from self.conversation(line, rec, self.open(None, rec[0]))
        elif isinstance(rec, dict) and "role" in rec:
            if self.loose is None:
                self.loose = self.open(None, rec)
            yield from self.message(line, rec, self.loose)
        elif isinstance(rec, dict) and "model" in rec and isinstance(rec.get("messages"), list):
            yield from self.exchange(line, rec, rec)        # a request body: a later one may resend its history
        elif isinstance(rec, dict) and (msgs := conversation_list(rec)) is not None:
            named = next((rec[k] for k in ID_KEYS if rec.get(k)), None)
            if named is None and msgs and isinstance(msgs[0], dict) and msgs[0].get("object") == "thread.message":
                named = msgs[0].get("thread_id")            # an Assistants API thread names itself
            conv = self.open(named, msgs[0] if msgs else rec)
            yield from self.conversation(line, msgs, conv, rec)
        elif isinstance(rec, dict) and (sims := simulations(rec)):
            for sim in sims:                                # tau2-bench results: one conversation each
                msgs = sim["messages"]
                yield from self.conversation(line, msgs, self.open(sim.get("id"), msgs[0] if msgs else sim))
        elif isinstance(rec, dict) and "custom_id" in rec and ("body" in rec or is_batch_output(rec)):
            yield from self.batch_line(line, rec)
        elif is_responses_body(rec):
            conv = self.last_call = self.open(responses_session(rec), responses_opening(rec), self.continued_session(rec))
            yield from self.responses_body(line, rec, conv)
        elif (exchange := exchange_body(rec)) is not None:
            if isinstance(exchange.get("messages"), list):
                yield from captured_at(self.exchange(line, exchange, rec), rec, exchange)
            else:                                           # a Responses API call: its body, with the reply
                yield from self.record(line, exchange)
        elif is_completion(rec):
            yield from self.conversation(line, [], self.open(rec.get("id"), rec), {"response": rec})
        elif is_saved_response(rec):
            conv = self.last_call = self.open(rec.get("id"), rec, self.continued_session(rec))
            yield from self.saved_response(line, rec, conv)
        elif (traffic := other_traffic(rec)) is not None:
            self.last_call = self.last_call or self.open(None, rec)
            yield traffic_draft(self.last_call, rec, traffic, line)
        else:
            yield BadRecord(line, "not an OpenAI chat record (no role, messages, history or input)")

    def exchange(self, line: int, body: dict, rec: dict) -> Iterator[Draft | BadRecord]:
        """A logged call ({"request": <body>, "response": <reply>}): only what
        it adds to the conversation an earlier call's history and reply began."""
        msgs = body["messages"]
        digests = [_history_digest(m) for m in msgs]
        found = self.threads.continued(digests)
        if found is None:
            source_id = next((x[k] for x in (body, rec) for k in ID_KEYS if x.get(k)), None)
            found = self.open(source_id, msgs[0] if msgs else body), 0
        conv, read = found
        self.last_call = conv
        yield from self.conversation(line, msgs, conv, body, skip=read)
        _, replies = _replies(body.get("response"))
        if replies and isinstance(replies[0], dict):          # the next call resends the first choice
            digests.append(_history_digest({"role": "assistant", **replies[0]}))
        self.threads.remember(conv, digests)

    def batch_line(self, line: int, rec: dict) -> Iterator[Draft | BadRecord]:
        custom_id = rec.get("custom_id")
        if "body" in rec:                                   # an input line: the request it asks for
            body = batch_request_body(rec)
            if body is None:
                yield BadRecord(line, f"batch request for {rec.get('url')!r} holds no conversation (no messages or input)")
            elif isinstance(body.get("messages"), list):
                msgs = body["messages"]
                yield from self.conversation(line, msgs, self.open(custom_id, msgs[0] if msgs else body), body)
            else:
                yield from self.responses_body(line, body, self.open(custom_id, responses_opening(body)))
            return
        # An output line: only what came back, in the conversation its custom_id names.
        response, error = rec.get("response"), rec.get("error")
        payload = response.get("body") if isinstance(response, dict) else None
        conv = self.open(custom_id, payload if isinstance(payload, dict) else error)
        if not isinstance(payload, dict):
            yield from self.conversation(line, [], conv, {"response": {"error": error}})
        elif is_response_object(payload):
            yield from self.response_object(line, payload, conv, payload.get("model"))
        else:
            yield from self.conversation(line, [], conv, {"response": payload})

    def conversation(self, line: int, msgs: list, conv: Conversation, body: dict | None = None,
                     skip: int = 0) -> Iterator[Draft | BadRecord]:
        """A conversation's messages and saved reply. `skip`: a logged call
        continuing a conversation whose first `skip` messages are read; its
        messages are then numbered by their place in the history."""
        body = body or {}
        self.bash_actions = is_mini_trajectory(body)
        system = flatten_content(body.get("system"))       # some request recorders keep it beside messages
        if system and not skip:
            conv.begin(body.get("system"))
            yield Draft(kind="system", text=system, session_id=conv.session_id, key=conv.key("system", 0),
                        turn_id=conv.turn(), line=line)
        submitted = submission(body)
        shown = ""                                        # the output of the run's last call, if a submit
        if skip:                                          # a logged call: the messages it adds, by place
            for i in range(skip, len(msgs)):
                yield from one_message(line, i, self.message(line, msgs[i], conv, i))
        elif submitted is None:
            for i, msg in enumerate(msgs):
                yield from one_message(line, i, self.message(line, msg, conv))
        else:
            for i, msg in enumerate(msgs):
                for d in one_message(line, i, self.message(line, msg, conv)):
                    if isinstance(d, Draft) and d.kind == "tool_result":
                        shown = d.text if d.tool and d.tool.get("name") == "submit" else ""
                    yield d
        # the patch, unless the run's exit message or its submit call's output already holds it
        # (an earlier command that printed it, `cat patch.diff` say, does not count)
        if submitted is not None and not self.exited and submitted[0].strip() not in shown:
            yield self.submitted(line, conv, *submitted)
        response = body.get("response")
        if response is None and body.get("error") and isinstance(body.get("messages"), list):
            response = {"error": body["error"]}           # a record that logs its call's failure beside it
        if response is None:
            return
        if isinstance(response, dict) and response.get("error") and "choices" not in response:
            # the request failed: what came back is the error
            yield error_draft(conv, response, failure_text(response["error"]), line)
            return
        model, replies = _replies(response)
        model = model or body.get("model")
        for n, reply in enumerate(replies):
            if not (isinstance(reply, dict) and reply.get("role", "assistant") == "assistant"):
                yield BadRecord(line, "response is not an assistant message or chat.completion")
                continue
            extra = {"model": model} if isinstance(model, str) else {}
            if n:
                extra["choice"] = n
            conv.begin(reply)
            place = f"response-{n}" if n else (len(msgs) if skip else "response")
            yield from self.assistant(line, reply, conv, place, extra or None)

    def message(self, line: int, msg: Any, conv: Conversation, index: int | str | None = None,
                extra: dict | None = None) -> Iterator[Draft | BadRecord]:
        index = conv.place(index)
        conv.begin(msg)
        if not isinstance(msg, dict):
            yield BadRecord(line, f"message {index} is not an object")
            return
        role = msg.get("role")
        if role == "exit":                         # mini-swe-agent's last message: how the run ended
            yield self.exit(line, msg, conv, index)
            return
        if role not in ROLES:
            yield BadRecord(line, f"message {index}: unknown role {role!r}")
            return
        if role == "assistant":
            yield from self.assistant(line, msg, conv, index, extra)
            return
        if self.open_action is not None and is_observation(msg):
            yield self.result(line, {**msg, "tool_call_id": self.open_action[0], "name": self.open_action[1]},
                              conv, index, _meta(msg))
            self.open_action = None
            return
        meta = _meta(msg)
        if msg.get("is_demo"):                     # SWE-agent's worked example: the harness's, not the user's
            meta = {**(meta or {}), "demonstration": True}
        if role == "user":
            conv.start_turn()
        if role in ("tool", "function", "ipython"):
            yield self.result(line, msg, conv, index, meta)
            return
        content = msg.get("content")
        text = content if isinstance(content, str) else flatten_parts(content)   # user text stays verbatim
        if text == "":
            return
        if role == "developer":
            meta = {**(meta or {}), "role": "developer"}
        yield Draft(kind="user" if role == "user" else "system", text=text, session_id=conv.session_id,
                    key=conv.key(index, 0), turn_id=conv.turn(), ts=message_ts(msg), line=line,
                    uuid=message_uuid(msg), meta=meta, media=media_blocks(content) or None)

    def assistant(self, line: int, msg: dict, conv: Conversation, index: int | str,
                  extra: dict | None = None) -> Iterator[Draft]:
        base = dict(session_id=conv.session_id, turn_id=conv.turn(), ts=message_ts(msg), line=line, uuid=message_uuid(msg))
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
        if reasoning is None:
            raw = msg.get("raw_data") if isinstance(msg.get("raw_data"), dict) else {}     # tau2-bench
            reasoning = (_reasoning_details(msg.get("reasoning_details")) or _thinking_blocks(msg.get("thinking_blocks"))
                         or _thinking_blocks(raw.get("thinking_blocks")))
        # SWE-agent repeats the visible content as `thought`: that is not a separate draft.
        if reasoning is not None and reasoning.strip() not in text:
            yield Draft(kind="assistant", text=f"<thinking>\n{reasoning}\n</thinking>",
                        key=conv.key(index, part), meta={**(meta or {}), "thinking": True}, **base)
            part += 1
        if text:
            if _refuses(content):                           # the refusal came as a content part
                meta = {**(meta or {}), "refusal": True}
            yield Draft(kind="assistant", text=text, key=conv.key(index, part), meta=meta, **base)
            part += 1
        if isinstance(msg.get("refusal"), str) and msg["refusal"]:
            yield Draft(kind="assistant", text=msg["refusal"], key=conv.key(index, part),
                        meta={**(meta or {}), "refusal": True}, **base)
            part += 1
        calls = msg.get("tool_calls")
        if not isinstance(calls, list):
            calls = msg.get("toolCalls")                    # camelCase: Mistral's JS client
            calls = calls if isinstance(calls, list) else []
        legacy = [msg["function_call"]] if isinstance(msg.get("function_call"), dict) else []
        for call in [*calls, *legacy]:
            yield self.call(call, conv.key(index, part), base, meta, f"call-c{conv.index}-m{index}-{part}")
            part += 1
        yield from self.text_action(msg, conv, index, part, base, meta)

    def call(self, call: Any, key: str, base: dict, meta: dict | None, fallback_id: str) -> Draft:
        call = call if isinstance(call, dict) else {}
        # tool_calls[] wrap the function ({"function": {...}}); the legacy function_call is it.
        fn = call.get("function") or call.get("custom") or call
        fn = fn if isinstance(fn, dict) else {}
        name = fn.get("name", fn.get("tool_name"))                       # tool_name: llama-stack
        name = name if isinstance(name, str) else None
        raw = fn.get("arguments", fn.get("input"))
        call_id = call.get("id") or call.get("call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if call_id is None:
            # Calls without ids (legacy function_call, fine-tuning data) are
            # answered in order: the next id-less result is this call's.
            call_id = fallback_id
            self.idless_calls.append(call_id)
        if name:
            self.call_names[call_id] = name
        return Draft(kind="tool_call", text=tool_call_text(name, raw),
                     tool={"name": name, "call_id": call_id, "input": parse_arguments(raw)},
                     key=key, meta=meta, **base)

    def result(self, line: int, msg: dict, conv: Conversation, index: int, meta: dict | None) -> Draft:
        call_id = msg.get("tool_call_id", msg.get("toolCallId", msg.get("call_id")))     # Mistral's JS client, llama-stack
        ids = msg.get("tool_call_ids")
        if call_id is None and isinstance(ids, list) and ids:        # SWE-agent keeps a list
            call_id = ids[0]
            if len(ids) > 1:
                meta = {**(meta or {}), "tool_call_ids": ids[1:]}
        if call_id is None and msg.get("role") == "tool":
            call_id = msg.get("id")                                  # tau2-bench names the call by `id`
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if call_id is None and self.idless_calls:
            call_id = self.idless_calls.popleft()
        name = msg.get("name", msg.get("tool_name"))
        name = name if isinstance(name, str) else self.call_names.get(call_id or "")
        if meta:
            meta.pop("name", None)               # it is the tool's name: it lives in `tool`
        text = flatten_parts(msg.get("content"))
        code = returncode(text)
        if code is not None:
            meta = {**(meta or {}), "exit_code": code}
        return Draft(kind="tool_result", text=text,
                     tool={"name": name, "call_id": call_id, "is_error": bool(code) or msg.get("error") is True},
                     session_id=conv.session_id, key=conv.key(index, 0), turn_id=conv.turn(),
                     ts=message_ts(msg), line=line, uuid=message_uuid(msg), meta=meta or None,
                     media=media_blocks(msg.get("content")) or None)


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    parser = _Parser(ctx)
    for line, rec in records:
        # a record whose every message repeats history already read gives nothing: counted as ignored
        yield from counted(parser.record(line, rec), ctx)


# ---------------------------------------------------------------- pieces

def _reasoning_details(details: Any) -> str | None:
    """The readable part of OpenRouter's `reasoning_details` (summaries and
    reasoning text; encrypted blocks carry nothing to read)."""
    if not isinstance(details, list):
        return None
    texts = [d.get(k) for d in details if isinstance(d, dict) for k in ("summary", "text")
             if isinstance(d.get(k), str) and d[k].strip()]
    return "\n\n".join(texts) or None


def _thinking_blocks(blocks: Any) -> str | None:
    """Anthropic thinking kept on an OpenAI-shaped message (LiteLLM's `thinking_blocks`)."""
    if not isinstance(blocks, list):
        return None
    texts = [b["thinking"] for b in blocks if isinstance(b, dict) and isinstance(b.get("thinking"), str)
             and b["thinking"].strip()]
    return "\n\n".join(texts) or None


def _replies(response: Any) -> tuple[Any, list]:
    """(the model that wrote it, the reply messages) of a saved response: a
    chat.completion's choices (n > 1 asks for alternatives: each is kept,
    the first as the reply), an Ollama reply's message, or the message itself."""
    if (message := envelope_reply(response)) is not None:
        return response.get("model"), [message]
    if isinstance(response, dict) and isinstance(response.get("choices"), list):
        ts = response.get("created")
        replies = [c.get("message") if isinstance(c, dict) else None for c in response["choices"]]
        if ts is not None:
            replies = [{"created": ts, **r} if isinstance(r, dict) else r for r in replies]
        return response.get("model"), replies
    return None, [response]


def _history_digest(msg: Any) -> int:
    """A message as a later call resends it: its text and the ids of its tool
    calls (two replies that only call tools differ by those alone)."""
    if not isinstance(msg, dict):
        return 0
    calls = msg.get("tool_calls") or msg.get("toolCalls")
    ids = [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else None
    return message_digest(msg.get("role"), msg.get("content"), ids, msg.get("tool_call_id", msg.get("toolCallId")))


def _meta(msg: dict) -> dict | None:
    meta = {}
    if isinstance(msg.get("name"), str):
        meta["name"] = msg["name"]
    if isinstance(msg.get("message_type"), str):          # SWE-agent: action / observation / ...
        meta["message_type"] = msg["message_type"]
    return meta or None


def _refuses(content: Any) -> bool:
    """Content parts holding a refusal ({"type": "refusal", "refusal"})."""
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "refusal" for p in content)
