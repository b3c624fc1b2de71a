"""Codex CLI rollouts (`~/.codex/sessions/**/rollout-*.jsonl`).

Every line is `{timestamp, type, payload}`. `response_item` lines are what
went to and came from the model; `event_msg` lines are the UI's stream,
which repeats much of it; `session_meta` names the session, `turn_context`
the model per turn; `compacted` marks a compaction.

- `session_meta` (the file's first): where the session ran (cwd, git
  branch, commit and remote), the Codex version, its tools and the
  instructions the model was given -> one `system` event, subtype
  `session_meta`.

- `response_item` message: role `user` -> `user`, except harness text Codex
  injects as a user message (`<environment_context>`, `<user_instructions>`,
  AGENTS.md, `<turn_aborted>`, `<user_shell_command>`, skills, sub-agent
  notices) -> `system` with meta subtype; `developer`/`system` -> `system`;
  `assistant` -> `assistant`.
- The same text arriving twice in one turn — as a response_item and as
  `event_msg` user_message / agent_message / agent_reasoning — is stored
  once, from whichever came first. A file with only the event form (older
  exports, review sessions) still yields every message.
- `reasoning` summaries (and raw reasoning text) -> `assistant` thinking
  text; `encrypted_content` is not text and is never stored.
- `function_call`, `custom_tool_call`, `local_shell_call`,
  `tool_search_call`, `web_search_call`, `image_generation_call` ->
  `tool_call`; their outputs -> `tool_result`, paired by `call_id`. A tool
  run that only the UI stream reports (no response_item call with that id
  came before it) becomes a call and its result.
- `compacted` / `context_compacted` / `compaction` items -> one `system`
  compaction marker; `turn_aborted` -> `system`. Token counts, task
  lifecycle, world state, snapshots and other UI bookkeeping are skipped.
- Paginated rollouts (cli 0.147 on, `history_mode: "paginated"`) write the
  UI stream as `item_completed` items instead (UserMessage, AgentMessage,
  Reasoning, Plan, tool runs, SubAgentActivity, ContextCompaction): read by
  reducers.formats.codex_items, with the same twin rules. A sub-agent's
  copy of its parent's history is marked `inherited`.
Tool calls and outputs are read in codex_calls.py; `codex exec --json`
output (thread events) in codex_exec.py.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, counted
from reducers.formats import codex_exec
from reducers.formats.codex_calls import legacy_call, legacy_result, model_call, model_output
from reducers.formats.codex_items import UI_TOOL_EVENTS, completed_item, ui_tool
from reducers.formats.codex_rollout import (Rollout, compaction, harness_draft, harness_kind, message_parts, texts, thinking,
                                            user_prompt)
from reducers.formats.common import compact_json, derived_session_id, media_blocks

NAME = "codex"

_CORE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context")

_HARNESS_KINDS = ("environment_context", "user_instructions")      # user_message.kind of older versions

_SKIPPED_ITEMS = ("ghost_snapshot", "additional_tools", "compaction_trigger", "other")

# Rollouts of older versions (mid-2025) carry no {timestamp, type, payload}
# envelope: a header line {id, timestamp, instructions, git}, then bare
# response items, with {"record_type": "state"} lines between them.
_BARE_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output", "local_shell_call",
                         "custom_tool_call", "custom_tool_call_output", "web_search_call", "compaction",
                         "compaction_summary", "ghost_snapshot"})


def _bare_header(d: dict) -> bool:
    return ("type" not in d and "payload" not in d and isinstance(d.get("id"), str) and d["id"]
            and isinstance(d.get("timestamp"), str) and not any(k in d for k in ("role", "seq", "kind", "record_type")))


def _bare_state(d: dict) -> bool:
    return "record_type" in d and "payload" not in d and _item_type(d) not in _BARE_ITEMS


def _bare_item(d: dict) -> bool:
    return "payload" not in d and _item_type(d) in _BARE_ITEMS


def _item_type(d: dict) -> str | None:
    kind = d.get("type")
    return kind if isinstance(kind, str) else None


def _enveloped(rec: dict) -> dict | None:
    """A record of the envelope-less layout in the envelope's shape; None for
    a state line (it carries nothing); the record itself when it is neither."""
    if _bare_item(rec):
        return {"timestamp": rec.get("timestamp"), "type": "response_item", "payload": rec}
    if _bare_header(rec):
        return {"timestamp": rec["timestamp"], "type": "session_meta", "payload": rec}
    if _bare_state(rec):
        return None
    return rec


def sniff(samples: list) -> bool:
    dicts = [s for s in samples if isinstance(s, dict)]
    if codex_exec.sniff(dicts):
        return True
    shaped = [d for d in dicts if isinstance(d.get("type"), str) and isinstance(d.get("payload"), dict)]
    if shaped:
        return 2 * len(shaped) >= len(dicts) and any(d["type"] in _CORE_TYPES for d in shaped)
    # the envelope-less layout: claimed only with its header or a state line
    bare = [d for d in dicts if _bare_header(d) or _bare_state(d) or _bare_item(d)]
    return (any(_bare_header(d) or _bare_state(d) for d in dicts) and any(_bare_item(d) for d in dicts)
            and 2 * len(bare) >= len(dicts))


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    reader = _Reader(ctx)
    for line, rec in records:
        # settings, usage snapshots, state lines and the UI stream's copies of what the
        # model's records hold give nothing: counted as ignored
        yield from counted(reader.record(line, rec), ctx)


class _Reader:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.st = Rollout(ctx)
        self.stream: codex_exec.ExecStream | None = None   # `codex exec --json` output, read by codex_exec.py

    def record(self, line: int, rec: Any) -> Iterator[Draft | BadRecord]:
        if not isinstance(rec, dict):
            yield BadRecord(line, "not a JSON object")
            return
        if self.stream is not None or codex_exec.is_event(rec):
            self.stream = self.stream or codex_exec.ExecStream(self.ctx)
            yield from self.stream.record(line, rec)
            return
        if "payload" not in rec:
            rec = _enveloped(rec)
            if rec is None:
                return
            if rec.get("timestamp") is not None:
                self.st.bare_time = rec["timestamp"]
        rtype, payload = rec.get("type"), rec.get("payload")
        if not isinstance(rtype, str) or not isinstance(payload, dict):
            yield BadRecord(line, "not a Codex rollout record (needs type and a payload object)")
            return
        if rtype == "session_meta":
            if self.st.session_meta(payload):
                header = session_header(payload)
                if header is not None:
                    self.st.at(line, rec, None)
                    yield self.st.draft("system", header[0], meta=header[1])
            return
        if rtype == "turn_context":
            if isinstance(payload.get("model"), str):
                self.st.model = payload["model"]
            return
        handler = _HANDLERS.get(rtype)
        if handler is None and rtype in _SETTINGS_TYPES:
            return
        if self.st.session is None:
            self.st.session = derived_session_id(self.ctx.source_id, 0, rec)
        self.st.at(line, rec, payload.get("id"))
        if handler is None:                 # a type newer than this parser: it may carry what the user said
            yield self.st.draft("system", compact_json(payload), meta={"subtype": rtype})
        else:
            yield from handler(self.st, payload)


_HEADER_FIELDS = ("cwd", "originator", "cli_version", "model_provider")


def session_header(payload: dict) -> tuple[str, dict] | None:
    """The session's setting as a `system` event: where it ran (cwd, git
    branch and commit: what people look a session up by later), which Codex,
    and the instructions the model was given (user instructions, the base
    system prompt of newer versions), which no other line carries. None when
    the record holds nothing but the id."""
    meta: dict = {k: payload[k] for k in _HEADER_FIELDS if isinstance(payload.get(k), str) and payload[k]}
    git = payload.get("git")
    git = {k: v for k, v in git.items() if isinstance(v, str) and v} if isinstance(git, dict) else {}
    if git:
        meta["git"] = git
    lines = []
    if "cwd" in meta:
        lines.append(f"cwd: {meta['cwd']}")
    if git:
        where = " @ ".join(v for v in (git.get("branch"), git.get("commit_hash")) if v)
        lines.append(f"git: {where} ({git['repository_url']})" if git.get("repository_url") and where
                     else f"git: {where or git.get('repository_url', '')}")
    if "cli_version" in meta or "originator" in meta:
        lines.append("codex: " + " ".join(meta[k] for k in ("originator", "cli_version") if k in meta))
    tools = _tool_names(payload.get("dynamic_tools"))
    if tools:
        lines.append("tools: " + ", ".join(tools))
    base = payload.get("base_instructions")
    base = base.get("text") if isinstance(base, dict) else base
    for title, text in (("instructions", payload.get("instructions")), ("base instructions", base)):
        if isinstance(text, str) and text.strip():
            lines.append(f"{title}:\n{text}")
    if not lines:
        return None
    return "\n".join(lines), {"subtype": "session_meta", **meta}


def _tool_names(spec: Any) -> list[str]:
    """Names of the tools a session was given: a list of tools, or a group
    ({name, tools: [...]}) whose tools are named under it."""
    if isinstance(spec, list):
        return [name for item in spec for name in _tool_names(item)]
    if not isinstance(spec, dict):
        return []
    if isinstance(spec.get("tools"), list):
        inner = _tool_names(spec["tools"])
        group = spec.get("name")
        return [f"{group}.{name}" for name in inner] if isinstance(group, str) and group else inner
    return [spec["name"]] if isinstance(spec.get("name"), str) and spec["name"] else []


# -- response items: what the model was sent and what it produced -------------------------

def _response_item(st: Rollout, p: dict) -> Iterator[Draft]:
    st.model_items = True
    ptype = p.get("type") or _untyped_item(p)
    if ptype == "message":
        yield from _message(st, p)
    elif ptype == "reasoning":
        parts = texts(p.get("summary")) + texts(p.get("content")) + texts(p.get("text"))
        fresh = [t for t in parts if st.first_of_pair("reasoning", t, "item")]
        if fresh:
            yield thinking(st, "\n\n".join(fresh))
    elif ptype == "agent_message":
        content = p.get("content")
        yield from _agent_message(st, "\n".join(texts(content)),
                                  p.get("author"), p.get("recipient"), "item")
    elif ptype in ("compaction", "compaction_summary", "context_compaction"):     # compaction_summary: its older name
        yield from compaction(st, None)
    elif ptype == "tool_call":
        yield legacy_call(st, p)
    elif ptype == "tool_result":
        yield legacy_result(st, p)
    elif isinstance(ptype, str) and ptype.endswith("_call") and ptype not in _SKIPPED_ITEMS:
        yield from model_call(st, p, ptype)
    elif isinstance(ptype, str) and ptype.endswith("_output") and ptype not in _SKIPPED_ITEMS:
        yield model_output(st, p, ptype)
    elif ptype not in _SKIPPED_ITEMS:
        # an item of a kind this parser does not know (a newer version's) is kept with its fields, not dropped
        yield st.draft("system", compact_json(p), meta={"subtype": "unknown_item",
                                                        "item_type": ptype if isinstance(ptype, str) else None})


def _untyped_item(p: dict) -> str | None:
    """What an item written without `type` is, by its fields: a call names
    its tool and arguments, an output answers a call id, a message has a
    role and content."""
    if "call_id" in p and "output" in p:
        return "function_call_output"
    if "call_id" in p and ("arguments" in p or "name" in p):
        return "function_call"
    if "role" in p and "content" in p:
        return "message"
    return None


def _message(st: Rollout, p: dict) -> Iterator[Draft]:
    role = p.get("role")
    parts, images = message_parts(p.get("content"))
    extra = {"images": images} if images else {}
    if role == "user":
        # Codex's own user text is its text parts concatenated: exactly the
        # `message` of the user_message event that mirrors this item.
        harness = harness_kind(parts[0] if parts else "")
        text = ("\n" if harness else "").join(parts)
        if harness:
            yield from harness_draft(st, text, harness, "item")
        else:
            yield from user_prompt(st, text, images, "item", extra, media_blocks(p.get("content")))
    elif role == "assistant":
        # the UI stream repeats an assistant message one event per text part
        fresh = [t for t in parts if st.first_of_pair("assistant", t, "item")]
        if isinstance(p.get("phase"), str):            # commentary while working, or the final answer
            extra["phase"] = p["phase"]
        if fresh:
            yield st.draft("assistant", "\n".join(fresh), meta=extra, by_model=True)
    elif parts:
        yield st.draft("system", "\n".join(parts), meta={"role": role if isinstance(role, str) else "unknown"})


def _event_images(p: dict) -> list[dict]:
    """A user_message event's images (data URLs, or paths of local files) as
    media blocks, so they are kept when the event is the copy that is stored."""
    return [{"type": "input_image", "image_url": url} for url in _listed(p.get("images")) if isinstance(url, str)] + \
        [{"type": "input_image", "local_path": path} for path in _listed(p.get("local_images")) if isinstance(path, str)]


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


def _agent_message(st: Rollout, text: str, author: Any, recipient: Any, source: str) -> Iterator[Draft]:
    """A message delivered from another agent of a multi-agent run: input
    this agent's model reads, but no user's turn."""
    if text and st.first_of_pair("agent_message", text, source):
        meta = {"subtype": "agent_message"}
        meta.update({k: v for k, v in (("author", author), ("recipient", recipient)) if isinstance(v, str)})
        yield st.draft("system", text, meta=meta)


# -- the UI stream --------------------------------------------------------------------------

def _event_msg(st: Rollout, p: dict) -> Iterator[Draft]:
    ptype = p.get("type")
    if ptype == "user_message":
        text = p.get("message") if isinstance(p.get("message"), str) else ""
        images = sum(len(p[k]) for k in ("images", "local_images") if isinstance(p.get(k), list))
        harness = harness_kind(text) or (p.get("kind") if p.get("kind") in _HARNESS_KINDS else None)
        if harness:
            yield from harness_draft(st, text, harness, "event")
        elif text or images:
            yield from user_prompt(st, text, images, "event", {"images": images} if images else None, _event_images(p))
    elif ptype == "agent_message":
        text = p.get("message") if isinstance(p.get("message"), str) else ""
        if text and st.first_of_pair("assistant", text, "event"):
            yield st.draft("assistant", text, by_model=True,
                           meta={"phase": p["phase"]} if isinstance(p.get("phase"), str) else None)
    elif ptype in ("agent_reasoning", "agent_reasoning_raw_content"):
        text = p.get("text") if isinstance(p.get("text"), str) else ""
        if text and st.first_of_pair("reasoning", text, "event"):
            yield thinking(st, text)
    elif ptype == "turn_aborted":
        reason = p.get("reason")
        text = f"<turn_aborted>{' ' + reason if isinstance(reason, str) and reason else ''}"
        yield from harness_draft(st, text, "turn_aborted", "event")
    elif ptype == "context_compacted":
        yield from compaction(st, None)
    elif ptype == "thread_rolled_back":
        yield st.draft("system", f"<thread_rolled_back num_turns={p.get('num_turns')}>",
                       meta={"subtype": "rolled_back"})
    elif ptype == "error":
        yield from _error(st, p, "event")
    elif ptype == "task_complete" and isinstance(p.get("error"), dict):
        # why the turn failed: paginated rollouts keep it only here
        yield from _error(st, p["error"], "completed")
    elif isinstance(ptype, str) and ptype.startswith("collab_") and not ptype.endswith("_begin") and _spawned_thread(p):
        # which thread a spawn or message went to: the link from parent to child
        yield _collab(st, p, ptype)
    elif ptype == "entered_review_mode":
        text = next((p[k] for k in ("prompt", "user_facing_hint") if isinstance(p.get(k), str) and p[k]), None)
        if text:
            yield st.draft("system", text, meta={"subtype": "review"})
    elif ptype == "exited_review_mode" and isinstance(p.get("review_output"), dict):
        yield st.draft("assistant", compact_json(p["review_output"]), meta={"subtype": "review_output"})
    elif ptype == "item_completed" and isinstance(p.get("item"), dict):
        yield from completed_item(st, p["item"])
    elif ptype == "thread_goal_updated" and isinstance(p.get("goal"), dict):
        goal = p["goal"]
        objective = goal.get("objective")
        if isinstance(objective, str) and objective:
            status = goal.get("status")
            yield st.draft("system", f"goal: {objective}", meta={
                "subtype": "goal", **({"status": status} if isinstance(status, str) else {})})
    elif ptype in UI_TOOL_EVENTS:
        yield from ui_tool(st, p, ptype)
    # everything else mirrors a response_item or is UI bookkeeping


def _error(st: Rollout, p: dict, source: str) -> Iterator[Draft]:
    """A turn's error ({message, codex_error_info} or {error: {message, kind}}),
    stored once though an error event and the turn's end may both report it."""
    error = p.get("error") if isinstance(p.get("error"), dict) else {}
    text = next((m for m in (p.get("message"), error.get("message")) if isinstance(m, str) and m), None)
    if text and st.first_of_pair("error", text, source):
        kind = error.get("kind") or p.get("codex_error_info")
        yield st.draft("system", text, meta={"subtype": "error", **({"error": kind} if isinstance(kind, str) else {})})


def _collab(st: Rollout, p: dict, ptype: str) -> Draft:
    """A spawn of, message to or close of a sub-agent: which thread it went
    to, and the prompt it was given."""
    thread = _spawned_thread(p)
    names = " ".join(f"{k}={p[k]}" for k in ("tool", "new_agent_nickname", "receiver_agent_nickname",
                                               "new_agent_role", "receiver_agent_role")
                     if isinstance(p.get(k), str) and p[k])
    text = f"<{ptype} thread={thread}{' ' + names if names else ''}>"
    if isinstance(p.get("prompt"), str) and p["prompt"]:
        text += "\n" + p["prompt"]
    call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
    st.linked.add((thread, None))
    return st.draft("system", text, meta={"subtype": "collab", "thread": thread, "call_id": call_id})


def _spawned_thread(p: dict) -> str | None:
    for key in ("new_thread_id", "receiver_thread_id"):
        if isinstance(p.get(key), str) and p[key]:
            return p[key]
    return None


def _compacted(st: Rollout, p: dict) -> Iterator[Draft]:
    message = p.get("message")
    yield from compaction(st, message if isinstance(message, str) else None)


def _inter_agent(st: Rollout, p: dict) -> Iterator[Draft]:
    content = p.get("content")
    yield from _agent_message(st, "\n".join(texts(content)),
                              p.get("author"), p.get("recipient"), "record")


# Settings and snapshots, re-sent every turn: the conversation never travels in them.
_SETTINGS_TYPES = frozenset(("world_state", "inter_agent_communication_metadata", "security_risk_score",
                             "realtime_item", "token_usage_record"))

_HANDLERS = {
    "response_item": _response_item,
    "event_msg": _event_msg,
    "compacted": _compacted,
    "inter_agent_communication": _inter_agent,
}
