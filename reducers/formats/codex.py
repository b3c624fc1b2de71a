"""Codex CLI rollouts (`~/.codex/sessions/**/rollout-*.jsonl`).

Records are `{timestamp, type, payload}`: `session_meta` (the session id),
`turn_context`, `response_item` (what went to and came from the model) and
`event_msg` (the UI's stream, which repeats much of it), plus `compacted`.
- `response_item` messages become user / assistant / system events;
  harness text the model was given as a user message
  (`<environment_context>`, `<user_instructions>`, AGENTS.md) is `system`;
- the same text arriving twice — as a response_item message and as
  `event_msg.user_message` / `agent_message` / `agent_reasoning` — is stored
  once, whichever came first;
- `function_call` / `custom_tool_call` / `local_shell_call` /
  `tool_search_call` become `tool_call`, their outputs `tool_result`, paired
  by `call_id`; tool events only the UI stream has (an MCP call, a web
  search) become a call and its result;
- reasoning summaries are kept as thinking text (encrypted content is not
  text and is skipped); `compacted` and `turn_aborted` are `system`.
A later `session_meta` with another id starts that session for the records
after it (a fork or sub-agent written into the same file)."""
from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Iterator

import orjson

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats.common import compact_json, derived_session_id, flatten_content, to_utc_iso, tool_call_text

NAME = "codex"
_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
          "inter_agent_communication_metadata"}
_HARNESS_PREFIXES = (("<environment_context>", "environment_context"), ("<user_instructions>", "user_instructions"),
                     ("# AGENTS.md instructions", "agents_md"), ("<turn_aborted>", "turn_aborted"),
                     ("<user_shell_command>", "user_shell_command"))
_CALL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call",
               "image_generation_call"}
_OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output"}
_PAIR_WINDOW = 64


def sniff(samples: list) -> bool:
    dicts = [s for s in samples if isinstance(s, dict)]
    if not dicts:
        return False
    shaped = [d for d in dicts if "payload" in d and d.get("type") in _TYPES]
    return bool(shaped) and len(shaped) >= len(dicts) // 2 and \
        any(d["type"] in ("session_meta", "response_item", "event_msg", "turn_context") for d in shaped)


class _State:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.session: str | None = ctx.session
        self.user_turns = 0
        self.calls: dict[str, str] = {}               # call_id -> tool name
        self.last_idless: str | None = None           # the open call of the old id-less layout
        # texts stored from one stream, waiting for their twin from the other
        self.unpaired: deque[tuple[str, str, str]] = deque(maxlen=_PAIR_WINDOW)

    @property
    def turn(self) -> str:
        return f"{self.session}/t{self.user_turns}"

    def twin_seen(self, channel: str, text: str, source: str) -> bool:
        """True when the other stream already stored this text (consume it);
        else remember it for its twin."""
        norm = _norm(text)
        for i, (ch, t, src) in enumerate(self.unpaired):
            if ch == channel and t == norm and src != source:
                del self.unpaired[i]
                return True
        self.unpaired.append((channel, norm, source))
        return False


def _norm(text: str) -> str:
    return " ".join(text.split())


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    st = _State(ctx)
    for line, rec in records:
        if not isinstance(rec, dict):
            yield BadRecord(line, "not a JSON object")
            continue
        rtype, payload = rec.get("type"), rec.get("payload")
        if rtype not in _TYPES or not isinstance(payload, dict):
            yield BadRecord(line, "not a Codex rollout record (needs type and payload)")
            continue
        if rtype == "session_meta":
            _session_meta(payload, st, line)
            continue
        if st.session is None:
            st.session = derived_session_id(ctx.source_id, 0, rec)
        ts = to_utc_iso(rec.get("timestamp"))
        make = _maker(st, line, ts)
        if rtype == "response_item":
            yield from _response_item(payload, st, make)
        elif rtype == "event_msg":
            yield from _event_msg(payload, st, make)
        elif rtype == "compacted":
            msg = payload.get("message")
            yield make("system", msg if isinstance(msg, str) and msg else "[compacted]", 0,
                       meta={"subtype": "compacted"})


def _session_meta(payload: dict, st: _State, line: int) -> None:
    if st.ctx.session:
        return
    sid = payload.get("id") or payload.get("session_id")
    if isinstance(sid, str) and sid and sid != st.session:
        st.session = sid
        st.user_turns = 0


def _maker(st: _State, line: int, ts):
    def make(kind: str, text: str, part: int, *, tool: dict | None = None, meta: dict | None = None) -> Draft:
        return Draft(kind=kind, text=text, session_id=st.session, key=f"codex/{st.session}/L{line}/{part}",
                     turn_id=st.turn, ts=ts, tool=tool, line=line, meta=meta or None)
    return make


def _message_text(content, images: list | None = None) -> str:
    """The text parts of a message; images are counted into `images` (when
    given) rather than written into the text, so typed text stays verbatim."""
    if isinstance(content, list):
        parts = []
        for block in content:
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "encrypted_content":
                continue
            if images is not None and btype in ("input_image", "image", "image_url"):
                images.append(block)
                continue
            parts.append(flatten_content(block))
        return "\n".join(p for p in parts if p)
    return flatten_content(content)


def _response_item(p: dict, st: _State, make):
    ptype = p.get("type")
    if ptype == "message":
        role = p.get("role")
        images: list = []
        text = _message_text(p.get("content"), images)
        extra = {"images": len(images)} if images else {}
        if role == "user":
            harness = next((sub for prefix, sub in _HARNESS_PREFIXES if text.lstrip().startswith(prefix)), None)
            if harness:
                yield make("system", text, 0, meta={"subtype": harness})
            elif not st.twin_seen("user", text, "item"):
                st.user_turns += 1
                yield make("user", text, 0, meta=extra)
        elif role == "assistant":
            if text and not st.twin_seen("assistant", text, "item"):
                yield make("assistant", text, 0, meta=extra)
        elif text:
            yield make("system", text, 0, meta={"role": role})
    elif ptype == "reasoning":
        parts = [s.get("text") for s in p.get("summary") or () if isinstance(s, dict) and s.get("text")]
        parts += [c.get("text") for c in p.get("content") or () if isinstance(c, dict) and c.get("text")]
        fresh = [t for t in parts if not st.twin_seen("reasoning", t, "item")]
        if fresh:
            yield make("assistant", "<thinking>\n" + "\n\n".join(fresh) + "\n</thinking>", 0, meta={"thinking": True})
    elif ptype == "agent_message":
        text = _message_text(p.get("content"))
        if text:
            yield make("assistant", text, 0, meta={"agent_message": True, "author": p.get("author"),
                                                   "recipient": p.get("recipient")})
    elif ptype in _CALL_ITEMS:
        yield _call(p, ptype, st, make)
    elif ptype in _OUTPUT_ITEMS:
        yield _output(p, ptype, st, make)
    elif ptype == "tool_call":                        # an older, id-less layout
        fn = p.get("function") if isinstance(p.get("function"), dict) else {}
        name = fn.get("name") or p.get("name")
        call_id = p.get("call_id") or f"{st.session}/{name}/{len(st.calls)}"
        st.calls[call_id] = name
        st.last_idless = call_id
        yield make("tool_call", tool_call_text(name, p.get("arguments")), 0,
                   tool={"name": name, "call_id": call_id, "input": p.get("arguments")})
    elif ptype == "tool_result":
        call_id = p.get("call_id") or st.last_idless
        result = p.get("result")
        yield make("tool_result", result if isinstance(result, str) else compact_json(result), 0,
                   tool={"name": p.get("name"), "call_id": call_id, "is_error": _failed(result)})


def _call(p: dict, ptype: str, st: _State, make) -> Draft:
    name = p.get("name") or {"local_shell_call": "local_shell", "tool_search_call": "tool_search",
                             "web_search_call": "web_search", "image_generation_call": "image_generation"}[ptype]
    call_id = p.get("call_id") or p.get("id") or f"{st.session}/{ptype}/{len(st.calls)}"
    if ptype == "custom_tool_call":
        args = p.get("input")
    elif ptype == "local_shell_call":
        args = p.get("action")
    elif ptype == "web_search_call":
        args = p.get("action")
    elif ptype == "image_generation_call":
        args = {"revised_prompt": p.get("revised_prompt")}
    else:
        args = p.get("arguments")
    parsed = args
    if isinstance(args, str):
        try:
            parsed = orjson.loads(args)
        except orjson.JSONDecodeError:
            parsed = args
    st.calls[call_id] = name
    return make("tool_call", tool_call_text(name, args), 0, tool={"name": name, "call_id": call_id, "input": parsed})


def _output(p: dict, ptype: str, st: _State, make) -> Draft:
    call_id = p.get("call_id")
    output = p.get("output") if ptype != "tool_search_output" else p.get("tools")
    if isinstance(output, str):
        text, meta = output, _exit_meta(output)
    elif ptype == "tool_search_output":
        text, meta = compact_json(output), {}
    else:
        text, meta = _message_text(output), {}
    failed = meta.get("exit_code") not in (None, 0) or p.get("status") == "failed"
    return make("tool_result", text, 0, tool={"name": st.calls.get(call_id), "call_id": call_id, "is_error": failed},
                meta=meta)


def _exit_meta(output: str) -> dict:
    """Older Codex wraps shell output as a JSON string {output, metadata:{exit_code}}."""
    if not output.startswith("{"):
        return {}
    try:
        data = orjson.loads(output)
    except orjson.JSONDecodeError:
        return {}
    md = data.get("metadata") if isinstance(data, dict) else None
    return {"exit_code": md["exit_code"]} if isinstance(md, dict) and "exit_code" in md else {}


def _failed(result) -> bool:
    if isinstance(result, dict):
        code = result.get("exitCode", result.get("exit_code"))
        return code not in (None, 0) or bool(result.get("isError") or result.get("is_error"))
    return False


def _event_msg(p: dict, st: _State, make):
    ptype = p.get("type")
    if ptype == "user_message":
        text = p.get("message") if isinstance(p.get("message"), str) else ""
        if text and not st.twin_seen("user", text, "event"):
            st.user_turns += 1
            yield make("user", text, 0)
    elif ptype == "agent_message":
        text = p.get("message") if isinstance(p.get("message"), str) else ""
        if text and not st.twin_seen("assistant", text, "event"):
            yield make("assistant", text, 0)
    elif ptype in ("agent_reasoning", "agent_reasoning_raw_content"):
        text = p.get("text") if isinstance(p.get("text"), str) else ""
        if text and not st.twin_seen("reasoning", text, "event"):
            yield make("assistant", f"<thinking>\n{text}\n</thinking>", 0, meta={"thinking": True})
    elif ptype == "turn_aborted":
        reason = p.get("reason")
        yield make("system", f"<turn_aborted>{' ' + reason if isinstance(reason, str) else ''}", 0,
                   meta={"subtype": "turn_aborted"})
    elif ptype == "context_compacted":
        yield make("system", "[context compacted]", 0, meta={"subtype": "compacted"})
    elif ptype == "entered_review_mode" and isinstance(p.get("prompt"), str):
        yield make("system", p["prompt"], 0, meta={"subtype": "review"})
    elif ptype == "exited_review_mode" and isinstance(p.get("review_output"), dict):
        yield make("assistant", compact_json(p["review_output"]), 0, meta={"subtype": "review_output"})
    elif ptype in ("mcp_tool_call_end", "web_search_end", "exec_command_end", "patch_apply_end"):
        yield from _ui_only_tool(p, ptype, st, make)


def _ui_only_tool(p: dict, ptype: str, st: _State, make):
    """A tool run the UI stream reports; only becomes events when no
    response_item already carried that call (it usually mirrors one)."""
    call_id = p.get("call_id")
    if not call_id or call_id in st.calls:
        return
    if ptype == "mcp_tool_call_end":
        inv = p.get("invocation") if isinstance(p.get("invocation"), dict) else {}
        name = f"{inv.get('server')}.{inv.get('tool')}" if inv else "mcp"
        args, result = inv.get("arguments"), p.get("result")
        ok = result.get("Ok") if isinstance(result, dict) else None
        text = _message_text(ok.get("content")) if isinstance(ok, dict) else compact_json(result)
        failed = not isinstance(ok, dict) or bool(ok.get("isError"))
    elif ptype == "web_search_end":
        name, args = "web_search", {"query": p.get("query")}
        results = p.get("results") if isinstance(p.get("results"), list) else []
        text = "\n".join(f"{r.get('title', '')} <{r.get('url', '')}> {r.get('snippet', '')}".strip()
                         for r in results if isinstance(r, dict))
        failed = False
    elif ptype == "exec_command_end":
        name, args = "exec_command", {"command": p.get("command")}
        text = str(p.get("aggregated_output") or p.get("formatted_output") or p.get("stdout") or "")
        failed = p.get("exit_code") not in (None, 0)
    else:
        name, args = "apply_patch", {"changes": sorted((p.get("changes") or {}).keys())}
        text = str(p.get("stdout") or "") + str(p.get("stderr") or "")
        failed = p.get("success") is False
    st.calls[call_id] = name
    yield make("tool_call", tool_call_text(name, args), 0, tool={"name": name, "call_id": call_id, "input": args})
    yield make("tool_result", text, 1, tool={"name": name, "call_id": call_id, "is_error": failed})
