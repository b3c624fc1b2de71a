"""Claude Code session logs (`~/.claude/projects/**/*.jsonl`).

One JSON object per line, `type` user / assistant / summary / system /
attachment and many bookkeeping types. What becomes an event:
- user lines: text (verbatim) -> `user`; `tool_result` blocks -> `tool_result`
  paired with their call by `tool_use_id`; injected lines (`isMeta`) and
  compaction summaries (`isCompactSummary`) -> `system`, not user text;
- assistant lines: a streamed message is written as several lines sharing
  one `message.id`, one content block each; text and thinking blocks carry
  the id as merge group (merged into one event after dedupe), `tool_use`
  blocks -> `tool_call`; blocks a writer repeated are dropped;
- `summary` lines, `compact_boundary` and other system lines with text,
  and attachments that showed the model text -> `system`;
- sidechain (sub-agent) lines are flagged in meta.
Snapshots, titles, progress, modes and other bookkeeping carry nothing the
model read and are skipped."""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats.common import compact_json, derived_session_id, flatten_content, to_utc_iso, tool_call_text

NAME = "claude-code"
_CONVERSATION = {"user", "assistant", "summary", "system", "attachment", "tool_use", "tool_result"}
_BOOKKEEPING = {"file-history-snapshot", "progress", "queue-operation", "permission-mode", "mode", "agent-name",
                "custom-title", "ai-title", "last-prompt", "frame-link", "pr-link", "started", "result",
                "relocated", "worktree-state", "bridge-session", "atis-latch"}
_MARKERS = ("sessionId", "parentUuid", "leafUuid", "isSidechain", "uuid")


def sniff(samples: list) -> bool:
    dicts = [s for s in samples if isinstance(s, dict)]
    if not dicts or any("payload" in d or ("seq" in d and "hash" in d) for d in dicts):
        return False
    hits = 0
    for d in dicts:
        if d.get("type") in _CONVERSATION | _BOOKKEEPING and any(k in d for k in _MARKERS):
            hits += 1
        elif d.get("type") == "summary" and "summary" in d:
            hits += 1
    return hits > 0 and hits >= len(dicts) // 2


class _State:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.session: str | None = ctx.session
        self.turn: str | None = None
        self.tool_names: dict[str, str] = {}
        self.used_ids: set[str] = set()
        self.seen_blocks: set[tuple[str, str]] = set()
        self.drift_calls: list[tuple[str, str]] = []     # (name, call_id) of old top-level tool_use lines

    def session_for(self, rec: dict) -> str | None:
        """The record's session: its own id, else the file's latest one;
        None while the file has not named one yet (the caller holds the
        record back until it does)."""
        if self.ctx.session:
            return self.ctx.session
        sid = rec.get("sessionId") or rec.get("session_id")
        if isinstance(sid, str) and sid:
            self.session = sid
            return sid
        return self.session

    def record_id(self, rec: dict, line: int) -> str:
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid and uuid not in self.used_ids:
            self.used_ids.add(uuid)
            return uuid
        return f"{uuid if isinstance(uuid, str) and uuid else 'L'}@{line}"


_HOLD_BACK = 1000      # session-less lines (a leading summary) waiting for the file to name its session


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    st = _State(ctx)
    held: list[tuple[int, dict]] = []
    for line, rec in records:
        if isinstance(rec, dict) and st.session is None and not ctx.session:
            st.session_for(rec)
            if st.session is None and len(held) < _HOLD_BACK:
                held.append((line, rec))
                continue
        if held:
            if st.session is None:
                st.session = derived_session_id(ctx.source_id, 0, held[0][1])
            yield from _parse_records(held, st)
            held = []
        yield from _parse_records([(line, rec)], st)
    if held:
        st.session = st.session or derived_session_id(ctx.source_id, 0, held[0][1])
        yield from _parse_records(held, st)


def _parse_records(records, st: "_State") -> Iterator[Draft | BadRecord]:
    for line, rec in records:
        if not isinstance(rec, dict):
            yield BadRecord(line, "not a JSON object")
            continue
        rtype = rec.get("type")
        message = rec.get("message") if isinstance(rec.get("message"), dict) else None
        if rtype is None and message and message.get("role") in ("user", "assistant"):
            rtype = message["role"]
        if rtype is None:
            yield BadRecord(line, "no 'type': not a Claude Code record")
            continue
        if rtype not in _CONVERSATION:
            continue                                  # bookkeeping: nothing the model read
        sid = st.session_for(rec) or st.session
        if st.turn is None:
            st.turn = f"{sid}/start"
        rid = st.record_id(rec, line)
        base = dict(session_id=sid, ts=to_utc_iso(rec.get("timestamp")), line=line,
                    uuid=rec.get("uuid") if isinstance(rec.get("uuid"), str) else None)
        meta = _meta(rec)
        if rtype == "user":
            yield from _user(rec, message, st, sid, rid, base, meta, line)
        elif rtype == "assistant":
            yield from _assistant(rec, message, st, sid, rid, base, meta)
        elif rtype == "summary":
            text = rec.get("summary")
            if isinstance(text, str) and text:
                digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
                yield Draft(kind="system", text=text, key=f"cc/{sid}/summary/{rec.get('leafUuid')}/{digest}",
                            turn_id=st.turn, meta={**meta, "subtype": "summary", "leafUuid": rec.get("leafUuid")},
                            **base)
        elif rtype == "system":
            draft = _system(rec, sid, rid, st, base, meta)
            if draft:
                yield draft
        elif rtype == "attachment":
            draft = _attachment(rec, sid, rid, st, base, meta)
            if draft:
                yield draft
        else:                                         # old schema: top-level tool_use / tool_result lines
            yield from _drift_tool(rec, rtype, st, sid, rid, base, meta)


def _meta(rec: dict) -> dict:
    meta = {}
    if rec.get("isSidechain") is True:
        meta["sidechain"] = True
        if isinstance(rec.get("agentId"), str):
            meta["agent_id"] = rec["agentId"]
    return meta


def _user(rec, message, st: _State, sid, rid, base, meta, line):
    content = (message or {}).get("content")
    injected = rec.get("isMeta") is True
    compact = rec.get("isCompactSummary") is True
    kind = "system" if injected or compact else "user"
    extra = {"subtype": "compact_summary"} if compact else {"is_meta": True} if injected else {}
    if isinstance(content, str):
        if kind == "user":
            st.turn = f"{sid}/{rid}"
        yield Draft(kind=kind, text=content, key=f"cc/{sid}/{rid}/0", turn_id=st.turn,
                    meta={**meta, **extra} or None, **base)
        return
    if not isinstance(content, list):
        if content is not None:
            yield BadRecord(line, "user message content is neither text nor a list of blocks")
        return
    pending: list[str] = []
    images = 0
    first_text_index = None
    for i, block in enumerate(content):
        btype = block.get("type") if isinstance(block, dict) else None
        if btype in ("image", "document"):
            images += 1                        # counted in meta: the typed text stays verbatim
            if first_text_index is None:
                first_text_index = i
            continue
        if btype == "tool_result":
            if pending or images:
                yield from _user_text(pending, first_text_index, kind, extra, images, st, sid, rid, base, meta)
                pending, images, first_text_index = [], 0, None
            call_id = block.get("tool_use_id") or rec.get("sourceToolUseID") or f"{rid}#{i}"
            body = block["content"] if "content" in block else block.get("text", "")
            yield Draft(kind="tool_result", text=flatten_content(body), key=f"cc/{sid}/{rid}/{i}",
                        turn_id=st.turn, tool={"name": st.tool_names.get(call_id), "call_id": call_id,
                                               "is_error": bool(block.get("is_error"))},
                        meta=meta or None, **base)
        else:
            if first_text_index is None:
                first_text_index = i
            pending.append(flatten_content(block))
    if pending or images:
        yield from _user_text(pending, first_text_index, kind, extra, images, st, sid, rid, base, meta)


def _user_text(parts, index, kind, extra, images, st: _State, sid, rid, base, meta):
    text = "\n\n".join(p for p in parts if p)
    if kind == "user":
        st.turn = f"{sid}/{rid}"
    info = {**meta, **extra, **({"images": images} if images else {})}
    yield Draft(kind=kind, text=text, key=f"cc/{sid}/{rid}/{index}", turn_id=st.turn, meta=info or None, **base)


def _assistant(rec, message, st: _State, sid, rid, base, meta):
    message = message or {}
    group = message.get("id") if isinstance(message.get("id"), str) else rid
    model = message.get("model")
    info = {**meta, **({"model": model} if isinstance(model, str) and model != "<synthetic>" else {})}
    content = message.get("content")
    if isinstance(content, str):
        if content:
            yield Draft(kind="assistant", text=content, key=f"cc/{sid}/{rid}/0", turn_id=st.turn,
                        meta=info or None, merge_group=group, **base)
        return
    if not isinstance(content, list):
        return
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        signature = (group, compact_json(block) if btype != "tool_use" else f"tool_use:{block.get('id')}")
        if signature in st.seen_blocks:
            continue                                   # a block the writer emitted twice
        st.seen_blocks.add(signature)
        key = f"cc/{sid}/{rid}/{i}"
        if btype == "text":
            if block.get("text"):
                yield Draft(kind="assistant", text=block["text"], key=key, turn_id=st.turn, meta=info or None,
                            merge_group=group, **base)
        elif btype in ("thinking", "redacted_thinking"):
            body = block.get("thinking") if btype == "thinking" else "[redacted]"
            if body:
                yield Draft(kind="assistant", text=f"<thinking>\n{body}\n</thinking>", key=key, turn_id=st.turn,
                            meta={**info, "thinking": True}, merge_group=group, **base)
        elif btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
            call_id = block.get("id") or f"{rid}#{i}"
            name = block.get("name")
            st.tool_names[call_id] = name
            yield Draft(kind="tool_call", text=tool_call_text(name, block.get("input")), key=key, turn_id=st.turn,
                        tool={"name": name, "call_id": call_id, "input": block.get("input")},
                        meta=info or None, **base)
        elif btype and btype.endswith("tool_result"):
            call_id = block.get("tool_use_id") or f"{rid}#{i}"
            yield Draft(kind="tool_result", text=flatten_content(block.get("content")), key=key, turn_id=st.turn,
                        tool={"name": st.tool_names.get(call_id), "call_id": call_id,
                              "is_error": bool(block.get("is_error"))}, meta=info or None, **base)


def _system(rec, sid, rid, st: _State, base, meta) -> Draft | None:
    subtype = rec.get("subtype")
    if subtype == "compact_boundary":
        cm = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
        details = " ".join(f"{k}={cm[k]}" for k in ("trigger", "preTokens") if k in cm)
        text = f"[compact_boundary] {details}".strip()
        return Draft(kind="system", text=text, key=f"cc/{sid}/{rid}/0", turn_id=st.turn,
                     meta={**meta, "subtype": "compact_boundary"}, **base)
    content = rec.get("content")
    if isinstance(content, str) and content.strip():
        return Draft(kind="system", text=content, key=f"cc/{sid}/{rid}/0", turn_id=st.turn,
                     meta={**meta, "subtype": subtype}, **base)
    return None


# Where an attachment keeps the text the model was shown, by attachment type.
def _attachment_text(att: dict) -> str:
    atype = att.get("type", "")
    if atype == "nested_memory" and isinstance(att.get("content"), dict):
        return str(att["content"].get("content") or "")
    if atype == "file" and isinstance(att.get("content"), dict):
        file = att["content"].get("file") if isinstance(att["content"].get("file"), dict) else {}
        return str(file.get("content") or "")
    if atype == "queued_command":
        return flatten_content(att.get("prompt"))
    if atype == "edited_text_file":
        return str(att.get("snippet") or "")
    if atype == "invoked_skills" and isinstance(att.get("skills"), list):
        return "\n\n".join(str(s.get("content") or "") for s in att["skills"] if isinstance(s, dict))
    content = att.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        return compact_json(content)
    for field in ("text", "stdout"):
        if isinstance(att.get(field), str):
            return att[field]
    return ""


def _attachment(rec, sid, rid, st: _State, base, meta) -> Draft | None:
    att = rec.get("attachment")
    if not isinstance(att, dict):
        return None
    text = _attachment_text(att)
    if not text.strip():
        return None
    return Draft(kind="system", text=text, key=f"cc/{sid}/{rid}/0", turn_id=st.turn,
                 meta={**meta, "attachment": att.get("type")}, **base)


def _drift_tool(rec, rtype, st: _State, sid, rid, base, meta):
    name = rec.get("name")
    if rtype == "tool_use":
        call_id = rec.get("id") or rid
        st.drift_calls.append((name, call_id))
        st.tool_names[call_id] = name
        yield Draft(kind="tool_call", text=tool_call_text(name, rec.get("input")), key=f"cc/{sid}/{rid}/0",
                    turn_id=st.turn, tool={"name": name, "call_id": call_id, "input": rec.get("input")},
                    meta=meta or None, **base)
        return
    call_id = rec.get("tool_use_id")
    if not call_id:                                   # pair with the latest open call of that tool
        for i in range(len(st.drift_calls) - 1, -1, -1):
            if st.drift_calls[i][0] == name:
                call_id = st.drift_calls.pop(i)[1]
                break
    body = rec.get("output") if "output" in rec else rec.get("content")
    yield Draft(kind="tool_result", text=flatten_content(body), key=f"cc/{sid}/{rid}/0", turn_id=st.turn,
                tool={"name": name, "call_id": call_id or rid, "is_error": bool(rec.get("is_error"))},
                meta=meta or None, **base)
