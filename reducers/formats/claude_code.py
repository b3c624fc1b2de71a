"""Claude Code session logs (`~/.claude/projects/**/*.jsonl`).

One JSON object per line; `type` says what it is. What becomes an event:
- `user` lines: typed text (verbatim) -> `user`; images inside it -> "[image]";
  `tool_result` blocks -> `tool_result`, paired with their call by
  `tool_use_id`. Injected lines (`isMeta`: caveats, reminders) and
  compaction summaries (`isCompactSummary`) -> `system`, never user text.
- `assistant` lines: a streamed message is written as several lines sharing
  one `message.id`, usually one content block per line. Text and thinking
  blocks carry that id as merge group (the shell merges adjacent ones into
  one event after dedupe); `tool_use` blocks -> `tool_call`. Blocks a writer
  re-emitted on a later line are dropped.
- `summary` lines, `compact_boundary` and other system lines with text, and
  attachments whose text the model was shown -> `system`.
- the old top-level `tool_use` / `tool_result` records -> call / result.
- sub-agent (sidechain) lines are flagged in meta and kept out of the main
  conversation's turns.
Snapshots, titles, progress, modes and other bookkeeping carry nothing the
model read and are skipped. What a line's own fields put in front of the
model (attachments, error reports) is read in claude_code_text.py; lines
other than messages (summaries, titles, system lines...) in
claude_code_side_lines.py; which turn a line belongs to in
claude_code_turns.py. The
Agent SDK's message stream (stream-json, or one JSON array of it) is read
as the same lines once claude_code_sdk.py renames its fields; its `init`
and `result` lines are kept as `system`, its partial deltas skipped."""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, Pending, counted
from reducers.event_kinds import SESSION_STATE
from reducers.formats import claude_code_side_lines as side
from reducers.formats.claude_code_line import Line, draft, input_digest, line_digest
from reducers.formats.claude_code_sdk import document_records, elements, sdk_line, sdk_marked
from reducers.formats.claude_code_text import fallback_text, injected_kind
from reducers.formats.claude_code_tree import Tree
from reducers.formats.claude_code_turns import Turns
from reducers.formats.common import (call_origin, compact_json, content_digest, derived_session_id, flatten_content,
                                     media_blocks, to_utc_iso, tool_call_text)

NAME = "claude-code"

_CONVERSATION = ("user", "assistant", "summary", "system", "attachment", "tool_use", "tool_result", "queue-operation",
                 "ai-title", "custom-title", "agent-name")
# UI state, counted as ignored: file backups (the edits are the tool calls), permission and
# input modes (repeated every turn), hook and command progress (the output is the tool
# result), a background task's start (its `result` line has its key), the remote-control
# bridge's ids, an opaque latch, and the SDK stream's partial deltas (the whole message
# follows as its own line)
_BOOKKEEPING = ("file-history-snapshot", "progress", "permission-mode", "mode", "started",
                "bridge-session", "atis-latch", "stream_event")
_KNOWN_TYPES = frozenset(_CONVERSATION + SESSION_STATE + ("result",) + _BOOKKEEPING)
# The sub-agent Claude Code runs to compact a session (subagents/agent-acompact-*.jsonl):
# its user lines are Claude Code's summary request
_COMPACTION_AGENT = "acompact"
_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")

# Bounds on what parsing remembers, so a huge log streams in flat memory.
_HOLD_BACK = 1000            # leading lines kept until the file names its session
_RECENT_MESSAGES = 512       # message ids whose blocks are remembered for repeat detection
_OPEN_IDLESS = 4096          # assistant lines with id-less calls still waiting for a result


# ---------------------------------------------------------------- sniff

def _looks_like_claude_code(d: dict) -> bool:
    if "payload" in d or "role" in d or ("seq" in d and "hash" in d):
        return False                         # Codex rollout line, a bare message, a trace event
    if sdk_marked(d):
        d = sdk_line(d)
    rtype = d.get("type")
    if not isinstance(rtype, str):
        return False
    if rtype == "summary":
        return isinstance(d.get("summary"), str) and "leafUuid" in d
    if rtype == "file-history-snapshot":
        return "snapshot" in d and "messageId" in d
    message = d.get("message")
    spoken = isinstance(message, dict) and message.get("role") in ("user", "assistant")
    marked = (isinstance(d.get("sessionId"), str) or "parentUuid" in d or "leafUuid" in d or spoken
              # a hand-trimmed line: {"type": "user", "message": {"content"}} with its time or cwd
              or (rtype in ("user", "assistant") and isinstance(message, dict) and "content" in message
                  and ("timestamp" in d or "cwd" in d)))
    # a line type this parser does not know still counts when it carries a session's message
    return marked and (rtype in _KNOWN_TYPES or ("sessionId" in d and ("parentUuid" in d or spoken)))


def resumes_at(rec: Any) -> bool:
    """Whether parsing a grown file may start again at this record: a
    prompt the user typed in the main conversation opens a turn, and what
    follows it reads the same without the lines before (checked against
    whole-file parses of real transcripts split at many points)."""
    if not isinstance(rec, dict) or rec.get("type") != "user" or rec.get("isSidechain") or rec.get("isMeta") \
            or rec.get("isCompactSummary") or not isinstance(rec.get("sessionId"), str):
        return False
    content = (rec.get("message") or {}).get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and bool(content) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _held(sample: Any) -> list:
    held = document_records(sample)
    return [sample] if held is None else held


def sniff(samples: list) -> bool:
    dicts = [d for s in samples for d in _held(s) if isinstance(d, dict)]
    if not dicts or any("payload" in d and "type" in d for d in dicts):
        return False
    hits = sum(1 for d in dicts if _looks_like_claude_code(d))
    return hits > 0 and 2 * hits >= len(dicts)


# ---------------------------------------------------------------- parse

def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    parser = _Parser(ctx)
    # Lines before the first `sessionId` (a leading summary, a snapshot) belong
    # to the file's session: hold them back until the file names it.
    held: list[tuple[int, Any]] = []
    for line, rec in elements(records):
        if parser.session is None:
            parser.learn_session(rec)
            if parser.session is None and len(held) < _HOLD_BACK:
                held.append((line, rec))
                continue
        if held:
            yield from parser.release(held)
            held = []
        yield from parser.record(line, rec)
    if held and ctx.growing:
        yield Pending(len(held))       # the line naming the session may be the next one written
    elif held:
        yield from parser.release(held)


class _Parser:
    _draft = staticmethod(draft)

    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.session: str | None = ctx.session
        self.turns = Turns()
        self.tree = Tree()
        self.used_ids: dict[str, str] = {}                        # uuid -> digest of the first line that carried it
        self.tool_names: dict[str, str | None] = {}               # call id -> tool name
        self.calls_seen: set[tuple[str, int]] = set()            # (call id, digest of its input)
        self.kept_once: set[str] = set()                          # keys of titles and session state already read
        self.blocks_seen: OrderedDict[str, dict[bytes, int]] = OrderedDict()  # message id -> block digest -> line
        self.idless_calls: OrderedDict[str, list[str]] = OrderedDict()       # assistant uuid -> open id-less calls
        self.drift_calls: list[tuple[Any, str]] = []              # (name, call id) of old top-level tool_use lines

    # -- session, identity ---------------------------------------------

    def learn_session(self, rec: Any) -> None:
        # (a line without `type` is not Claude Code's: an exporter's header names its own idea of the session)
        if isinstance(rec, dict) and "session_id" in rec:
            rec = sdk_line(rec)
        if isinstance(rec, dict) and rec.get("type") and isinstance(rec.get("sessionId"), str) and rec["sessionId"]:
            self.session = rec["sessionId"]

    def release(self, held: list[tuple[int, Any]]) -> Iterator[Draft | BadRecord]:
        if self.session is None:
            self.session = derived_session_id(self.ctx.source_id, 0, held[0][1])
        for line, rec in held:
            yield from self.record(line, rec)

    def _session_of(self, rec: dict) -> str:
        if not self.ctx.session:
            self.learn_session(rec)             # the line's own id; else the file's latest one
        assert self.session is not None
        return self.session

    def _replayed(self, rec: dict) -> str | None:
        """The line's digest, or None when it repeats, verbatim, an earlier
        line with its uuid: Claude Code sometimes writes a line again
        (stream-json input re-writing the history, concurrent writers), and
        the copy is no new message, call or result."""
        uuid = rec.get("uuid")
        if not (isinstance(uuid, str) and uuid):
            return ""
        digest = line_digest(rec)
        return None if self.used_ids.get(uuid) == digest else digest

    def _record_id(self, rec: dict, line: int, digest: str = "") -> str:
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid and uuid not in self.used_ids:
            self.used_ids[uuid] = digest
            return uuid
        # Missing, or reused (fixtures with "[trimmed for fixture]"): the line
        # number keeps the key unique, and stays stable as the file grows; a
        # line with no uuid also carries its digest, so another file forced
        # into the same session (--session) is not taken for this one.
        if isinstance(uuid, str) and uuid:
            return f"{uuid}@{line}"
        return f"L@{line}~{content_digest(rec)}"

    # -- one record ------------------------------------------------------------

    def record(self, line: int, rec: Any) -> Iterator[Draft | BadRecord]:
        if not isinstance(rec, dict):
            yield BadRecord(line, "not a JSON object")
            return
        if "session_id" in rec:
            rec = sdk_line(rec)
        rtype = rec.get("type")
        if (not isinstance(rtype, str) or not rtype) and isinstance(rec.get("_type"), str):
            # a line an exporting tool added: kept whole, in the session the file's own lines name
            rec, rtype = {"type": "wrapper", "wrapped": rec}, "wrapper"
        if not isinstance(rtype, str) or not rtype:
            yield BadRecord(line, "no 'type': not a Claude Code record")
            return
        if rtype == "progress" and (inner := side.agent_progress(rec)) is not None:
            rec, rtype = inner, inner["type"]       # a sub-agent's message, as its own file has it
        handler = _HANDLERS.get(rtype) or _message_handler(rec, rtype)
        state = rtype in SESSION_STATE or (rtype == "result" and "session_id" not in rec)
        if handler is None or state:
            # Neither moves the file's session or turn, as when all of these were skipped:
            # events already logged keep their keys when a grown file is read again.
            own = rec.get("sessionId") if isinstance(rec.get("sessionId"), str) and rec["sessionId"] else None
            sid = self.ctx.session or own or self.session
            self.turns.pass_through(rec, sid)
            self.tree.pass_through(rec)
            kept = self._session_state(line, rec, sid) if state and sid is not None else None
            if kept is None:
                self.ctx.ignored += 1
            else:
                yield kept
            return
        digest = self._replayed(rec)
        if digest is None:
            self.ctx.ignored += 1
            return
        sid = self._session_of(rec)
        sidechain = rec.get("isSidechain") is True
        meta: dict = {}
        if sidechain:
            meta["sidechain"] = True
            if isinstance(rec.get("agentId"), str):
                meta["agent_id"] = rec["agentId"]
        uuid = rec.get("uuid") if isinstance(rec.get("uuid"), str) else None
        rid = self._record_id(rec, line, digest)
        # The uuid alone is no identity across files: fixture sets reuse a
        # session's uuids for other content. The digest keeps such a line
        # apart, while a verbatim copy (a line written again) still dedupes.
        at = Line(session_id=sid, rid=rid, line=line, uuid=uuid,
                   ts=to_utc_iso(rec.get("timestamp")), meta=meta, sidechain=sidechain,
                   turn=self.turns.of(rec, sid, sidechain), content=f"~{digest}" if rid == uuid else "")
        # nothing: a repeat, or a line with nothing in it
        yield from self.tree.place(rec, at, list(counted(handler(self, rec, at), self.ctx)))
        self.turns.remember(at)

    def _session_state(self, line: int, rec: dict, sid: str) -> Draft | None:
        turn = self.turns.main_turn if self.turns.session == sid else f"{sid}/start"
        at = Line(session_id=sid, rid=f"L@{line}", line=line, uuid=None, ts=to_utc_iso(rec.get("timestamp")),
                  meta={}, sidechain=False, turn=turn)
        return side.state(rec, at, self.kept_once)

    def _result(self, at: Line, part: int, call_id: str, body: Any, is_error: Any, name: Any = None,
                meta: dict | None = None) -> Draft:
        return self._draft(at, "tool_result", flatten_content(body), part, meta=meta,
                           tool={"name": name if isinstance(name, str) else self.tool_names.get(call_id),
                                 "call_id": call_id, "is_error": bool(is_error)},
                           media=media_blocks(body) or None)

    # -- user ------------------------------------------------------------------

    def user(self, rec: dict, at: Line) -> Iterator[Draft | BadRecord]:
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if rec.get("isCompactSummary") is True:
            kind, extra = "system", {"subtype": "compact_summary"}
        elif rec.get("isMeta") is True:
            kind, extra = "system", {"is_meta": True}
        elif at.meta.get("agent_id", "").startswith(_COMPACTION_AGENT):
            kind, extra = "system", {"subtype": "compact_prompt"}
        else:
            kind, extra = "user", {}
        if isinstance(content, str):
            yield from self._user_text(rec, at, kind, extra, [content], 0, [])
            return
        if not isinstance(content, list):
            # A user line whose message holds nothing readable (a typo'd key, a
            # bare string): report it rather than lose it silently.
            yield BadRecord(at.line, "user line without a readable message.content")
            return
        run: list[str] = []
        media: list[dict] = []
        first = 0
        for i, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                if run:
                    yield from self._user_text(rec, at, kind, extra, run, first, media)
                    run, media = [], []
                yield self._user_result(rec, at, i, block)
                continue
            if not run:
                first = i
            run.append(flatten_content(block))      # text verbatim; image -> "[image]"; documents named
            media += media_blocks(block)             # ...and the image itself kept as an attachment
        if run:
            yield from self._user_text(rec, at, kind, extra, run, first, media)

    def _user_text(self, rec: dict, at: Line, kind: str, extra: dict, parts: list[str], index: int,
                   media: list[dict]):
        text = "\n\n".join(p for p in parts if p != "")
        if text == "":
            return
        if kind == "user":
            # A line the harness wrote as the user (another session's message, a
            # task notification...) stays a user line, as the source has it, marked.
            injected = injected_kind(text)
            if injected:
                extra = {**extra, "injected": injected}
            self.turns.start(at, rec)
        yield self._draft(at, kind, text, index, meta=extra, media=media or None)

    def _user_result(self, rec: dict, at: Line, index: int, block: dict) -> Draft:
        call_id = block.get("tool_use_id")
        if not (isinstance(call_id, str) and call_id):
            call_id = self._orphan_call_id(rec, at, index)
        body = block["content"] if "content" in block else block.get("text", "")
        return self._result(at, index, call_id, body, block.get("is_error"))

    def _orphan_call_id(self, rec: dict, at: Line, index: int) -> str:
        """A result block without `tool_use_id` (2.1.x fixtures): the line's
        `sourceToolUseID` when that names a known call, else the oldest open
        id-less call of the assistant line it answers, else whatever id the
        line gives."""
        source_id = rec.get("sourceToolUseID")
        if isinstance(source_id, str) and source_id in self.tool_names:
            return source_id
        for parent in (rec.get("sourceToolAssistantUUID"), rec.get("parentUuid")):   # the line it answers
            open_calls = self.idless_calls.get(f"{at.session_id}\0{parent}") if isinstance(parent, str) else None
            if open_calls:
                return open_calls.pop(0)
        if isinstance(source_id, str) and source_id:
            return source_id
        return f"{at.rid}#{index}"

    # -- assistant -------------------------------------------------------------

    def assistant(self, rec: dict, at: Line) -> Iterator[Draft | BadRecord]:
        message = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        mid = message.get("id")
        group = mid if isinstance(mid, str) and mid else at.rid
        extra: dict = {}
        if isinstance(message.get("model"), str):
            extra["model"] = message["model"]
        if rec.get("isApiErrorMessage") is True:
            extra["api_error"] = True
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            # as for a user line: a message with no readable content is reported, not lost
            yield BadRecord(at.line, "assistant line without a readable message.content")
            return
        for i, block in enumerate(content):
            if isinstance(block, str):
                block = {"type": "text", "text": block}
            if not isinstance(block, dict) or self._repeated(group, block, at.line):
                continue
            btype = block.get("type")
            if btype in _CALL_BLOCKS:
                draft = self._call(at, i, block, extra)
                if draft:
                    yield draft
            elif isinstance(btype, str) and btype.endswith("tool_result"):     # server tools: web search results
                call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else f"{at.rid}#{i}"
                yield self._result(at, i, call_id, block.get("content"), block.get("is_error"), meta=extra)
            elif btype == "thinking":
                thought = block.get("thinking")
                if isinstance(thought, str) and thought:
                    yield self._draft(at, "assistant", f"<thinking>\n{thought}\n</thinking>", i,
                                      meta={**extra, "thinking": True}, merge_group=group)
                elif block.get("signature"):          # it thought; the log does not show what
                    yield self._draft(at, "assistant", "<thinking>[not shown]</thinking>", i,
                                      meta={**extra, "thinking": True}, merge_group=group)
            elif btype == "redacted_thinking":
                yield self._draft(at, "assistant", "<thinking>[redacted]</thinking>", i,
                                  meta={**extra, "thinking": True}, merge_group=group)
            elif isinstance(block.get("text"), str) and block["text"]:
                yield self._draft(at, "assistant", block["text"], i, meta=extra, merge_group=group)
            elif btype == "fallback":                  # Claude Code switched models mid-message
                yield self._draft(at, "system", fallback_text(block), i, meta={"subtype": "model_fallback"})
            elif btype != "text":                      # an image, a block type newer than this parser
                yield self._draft(at, "assistant", flatten_content(block), i, meta=extra, merge_group=group,
                                  media=media_blocks(block) or None)

    def _repeated(self, group: str, block: dict, line: int) -> bool:
        """A block already written on an earlier line of the same message:
        some writers re-emit the message so far with every streamed line."""
        digest = hashlib.blake2b(compact_json(block).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        seen = self.blocks_seen.get(group)
        if seen is None:
            seen = self.blocks_seen[group] = {}
            if len(self.blocks_seen) > _RECENT_MESSAGES:
                self.blocks_seen.popitem(last=False)
        else:
            self.blocks_seen.move_to_end(group)
        first_line = seen.setdefault(digest, line)
        return first_line != line

    def _call(self, at: Line, index: int, block: dict, extra: dict) -> Draft | None:
        name = block.get("name") if isinstance(block.get("name"), str) else None
        call_id = block.get("id")
        if isinstance(call_id, str) and call_id:
            # (an id reused for another input, as in sanitized exports, is another call)
            seen = (call_id, input_digest(block.get("input")))
            if seen in self.calls_seen:
                return None                          # the same call written twice
            self.calls_seen.add(seen)
        else:
            call_id = f"{at.rid}#{index}"
            if at.uuid:                              # its result may find it through sourceToolAssistantUUID
                key = f"{at.session_id}\0{at.uuid}"
                self.idless_calls.setdefault(key, []).append(call_id)
                if len(self.idless_calls) > _OPEN_IDLESS:
                    self.idless_calls.popitem(last=False)
        self.tool_names[call_id] = name
        origin = call_origin(block)
        return self._draft(at, "tool_call", tool_call_text(name, block.get("input")), index,
                           meta={**(extra or {}), **origin} if origin else extra,
                           tool={"name": name, "call_id": call_id, "input": block.get("input")})

    # -- the old schema: top-level tool_use / tool_result lines -----------------

    def drift_call(self, rec: dict, at: Line) -> Iterator[Draft]:
        name = rec.get("name") if isinstance(rec.get("name"), str) else None
        call_id = rec.get("id") if isinstance(rec.get("id"), str) and rec["id"] else at.rid
        self.drift_calls.append((name, call_id))
        if len(self.drift_calls) > _OPEN_IDLESS:
            del self.drift_calls[0]
        self.tool_names[call_id] = name
        yield self._draft(at, "tool_call", tool_call_text(name, rec.get("input")), 0,
                          tool={"name": name, "call_id": call_id, "input": rec.get("input")})

    def drift_result(self, rec: dict, at: Line) -> Iterator[Draft]:
        if not any(k in rec for k in ("tool_use_id", "output", "content")) and isinstance(rec.get("message"), dict):
            yield from self.user(rec, at)                   # the result is a block of the line's message
            return
        name = rec.get("name")
        call_id = rec.get("tool_use_id") if isinstance(rec.get("tool_use_id"), str) else None
        if not call_id:                                     # they carry no id: the latest open call of that tool
            for i in range(len(self.drift_calls) - 1, -1, -1):
                if self.drift_calls[i][0] == name:
                    call_id = self.drift_calls.pop(i)[1]
                    break
        body = rec["output"] if "output" in rec else rec.get("content")
        yield self._result(at, 0, call_id or at.rid, body, rec.get("is_error"), name=name)


def _message_handler(rec: dict, rtype: str):
    """A line of a type this parser does not know that still carries a user
    or assistant message (a newer version's line type) is read as one; one
    without a message is kept as it is (`unknown`)."""
    if rtype in _KNOWN_TYPES:
        return None
    message = rec.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    return _HANDLERS[role] if role in ("user", "assistant") else _UNKNOWN


def _side(read):
    """A reader of claude_code_side_lines.py as a handler: they need none of
    the parser's state."""
    return lambda _parser, rec, at: read(rec, at)


_HANDLERS = {
    "user": _Parser.user,
    "assistant": _Parser.assistant,
    "summary": _side(side.summary),
    "system": _side(side.system),
    "attachment": _side(side.attachment),
    "tool_use": _Parser.drift_call,
    "tool_result": _Parser.drift_result,
    "queue-operation": _side(side.queue),
    "result": _side(side.run_result),
    "ai-title": lambda parser, rec, at: side.title(rec, at, parser.kept_once),
    "custom-title": lambda parser, rec, at: side.title(rec, at, parser.kept_once),
    "agent-name": lambda parser, rec, at: side.title(rec, at, parser.kept_once),
    "wrapper": _side(side.wrapper),
}
_UNKNOWN = _side(side.unknown)
