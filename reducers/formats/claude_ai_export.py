"""Claude.ai's data export (`conversations.json`): a JSON array of
conversations {uuid, name, created_at, chat_messages: [...]}, each message
{uuid, sender: "human" | "assistant", text, content: [blocks], created_at,
attachments, files}. Read by the `anthropic` format.

A message's `content` blocks are read when it has them (older exports hold
only `text`): text, thinking (as thinking), tool_use -> tool_call and
tool_result -> tool_result, paired by id or else by the tool's name. A
file's text the export extracted (`attachments[].extracted_content`) is
what the model read, so it is kept in the message, after its name; other
files are named. The conversation's name is kept as a `system` title.
Message uuids key the drafts, so a later export adds only new messages."""
from __future__ import annotations

from typing import Any, Iterator

from reducers.drafts import Draft, ParseContext
from reducers.formats.common import (conversation_session_id, exported_conversations, flatten_content, is_export_of,
                                     to_utc_iso, tool_call_text)

PREFIX = "claude-ai"


def is_conversation(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("chat_messages"), list) and (
        "uuid" in rec or "name" in rec)


def is_export(rec: Any) -> bool:
    return is_export_of(rec, is_conversation)


def parse_export(rec: Any, line: int, ctx: ParseContext) -> Iterator[Draft]:
    for index, conv in exported_conversations(rec, is_conversation):
        yield from _Conversation(conv, index, line, ctx).drafts()


class _Conversation:
    def __init__(self, conv: dict, index: int, line: int, ctx: ParseContext):
        named = conv.get("uuid") if isinstance(conv.get("uuid"), str) and conv["uuid"] else None
        self.session = conversation_session_id(ctx, index, named, conv.get("name"))
        self.conv, self.line = conv, line
        self.turn = f"{self.session}/start"
        self.open_calls: list[tuple[str | None, str]] = []       # (tool name, call id) awaiting a result

    def drafts(self) -> Iterator[Draft]:
        name = self.conv.get("name")
        if isinstance(name, str) and name.strip():
            yield self.draft("name", 0, "system", name, to_utc_iso(self.conv.get("created_at")), meta={"subtype": "title"})
        for i, msg in enumerate(self.conv["chat_messages"]):
            if isinstance(msg, dict):
                yield from self.message(i, msg)

    def message(self, index: int, msg: dict) -> Iterator[Draft]:
        ident = msg["uuid"] if isinstance(msg.get("uuid"), str) and msg["uuid"] else f"m{index}"
        ts = to_utc_iso(msg.get("created_at"))
        user = msg.get("sender") == "human"
        if user:
            self.turn = f"{self.session}/{ident}"
        kind = "user" if user else "assistant"
        blocks = msg.get("content") if isinstance(msg.get("content"), list) and msg["content"] else \
            [{"type": "text", "text": msg.get("text") if isinstance(msg.get("text"), str) else ""}]
        files = _files(msg)
        run: list[str] = [files] if files else []
        part = 0
        for block in blocks:
            btype = block.get("type") if isinstance(block, dict) else None
            if btype in ("tool_use", "tool_result"):          # the text so far, then the call or its result
                if any(run):
                    yield self.draft(ident, part, kind, "\n\n".join(t for t in run if t), ts)
                run, part = [], part + 1
                yield (self.call if btype == "tool_use" else self.result)(ident, part, block, ts)
                part += 1
            elif btype == "thinking":
                thought = block.get("thinking")
                if isinstance(thought, str) and thought.strip():
                    run.append(f"<thinking>\n{thought}\n</thinking>")
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                run.append(block["text"])
            elif block is not None:
                run.append(flatten_content([block]))
        if any(run):
            yield self.draft(ident, part, kind, "\n\n".join(t for t in run if t), ts)

    def call(self, ident: str, part: int, block: dict, ts: str | None) -> Draft:
        name = block.get("name") if isinstance(block.get("name"), str) else None
        call_id = block.get("id") if isinstance(block.get("id"), str) and block["id"] else f"{ident}#{part}"
        self.open_calls.append((name, call_id))
        return self.draft(ident, part, "tool_call", tool_call_text(name, block.get("input")), ts,
                          tool={"name": name, "call_id": call_id, "input": block.get("input")})

    def result(self, ident: str, part: int, block: dict, ts: str | None) -> Draft:
        name = block.get("name") if isinstance(block.get("name"), str) else None
        call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
        for i, (open_name, open_id) in enumerate(self.open_calls):
            if open_id == call_id or (call_id is None and open_name == name):
                call_id = self.open_calls.pop(i)[1]
                break
        return self.draft(ident, part, "tool_result", flatten_content(block.get("content")), ts,
                          tool={"name": name, "call_id": call_id or f"{ident}#{part}",
                                "is_error": block.get("is_error") is True})

    def draft(self, ident: str, part: int, kind: str, text: str, ts: str | None, *, meta: dict | None = None,
              tool: dict | None = None) -> Draft:
        return Draft(kind=kind, text=text, session_id=self.session, key=f"{PREFIX}/{self.session}/{ident}/{part}",
                     turn_id=self.turn, ts=ts, tool=tool, line=self.line, uuid=ident if ident != "name" else None,
                     meta=meta)


def _files(msg: dict) -> str:
    """The files the message carried: an attachment's extracted text (what
    the model read) under its name, other files by name."""
    out = []
    for att in msg.get("attachments") if isinstance(msg.get("attachments"), list) else ():
        if isinstance(att, dict):
            name = att.get("file_name") if isinstance(att.get("file_name"), str) else ""
            body = att.get("extracted_content") if isinstance(att.get("extracted_content"), str) else ""
            out.append(f"[document: {name}]\n{body}".rstrip() if name else body)
    for f in msg.get("files") if isinstance(msg.get("files"), list) else ():
        if isinstance(f, dict) and isinstance(f.get("file_name"), str):
            out.append(f"[file: {f['file_name']}]")
    return "\n\n".join(o for o in out if o)
