"""ChatGPT's data export (`conversations.json`): a JSON array of
conversations, each a tree of messages (`mapping`: node id -> {message,
parent, children}) whose `current_node` is the leaf of the branch the user
last saw. Read by the `openai` format.

Every message node is kept, in the tree's order (a parent before its
children, children in the order they were written); a message on a branch
the user left by editing or regenerating carries `meta.branch: "alternate"`.
Each message names the message it follows (`source.parent`: the nearest
ancestor that made an event, else the tree's root node), and the events
of the `current_node` leaf carry `meta.live_leaf`: a later export of the
same conversation, where the user went back to another branch, says
which branch is live by its new leaf (reducers/branches.py).
Authors map to kinds: `user` -> user, `assistant` -> assistant (a message
addressed to a tool, `recipient` other than "all", is a tool_call of that
tool), `tool` -> tool_result of the latest open call to that tool, `system`
-> system. Content types: text and multimodal text (images as "[image]"),
code, execution output, browsing results and quotes, thoughts (thinking),
the user's custom instructions and saved memory (system). A hidden empty
system message holds nothing and is skipped. Node ids key the drafts, so a
re-export of the same conversation adds only new messages."""
from __future__ import annotations

from typing import Any, Iterator

from reducers.drafts import Draft, ParseContext
from reducers.formats.common import (compact_json, conversation_session_id, exported_conversations, flatten_content,
                                     is_export_of, to_utc_iso)

PREFIX = "chatgpt"


def is_conversation(rec: Any) -> bool:
    return isinstance(rec, dict) and isinstance(rec.get("mapping"), dict) and (
        "current_node" in rec or "title" in rec or "create_time" in rec)


def is_export(rec: Any) -> bool:
    """One exported conversation, or the export's array of them."""
    return is_export_of(rec, is_conversation)


def parse_export(rec: Any, line: int, ctx: ParseContext) -> Iterator[Draft]:
    for index, conversation in exported_conversations(rec, is_conversation):
        yield from _Conversation(conversation, index, line, ctx).drafts()


class _Conversation:
    def __init__(self, conv: dict, index: int, line: int, ctx: ParseContext):
        named = next((conv[k] for k in ("conversation_id", "id") if isinstance(conv.get(k), str) and conv[k]), None)
        self.session = conversation_session_id(ctx, index, named, conv.get("title"))
        self.conv, self.line = conv, line
        self.mapping: dict = conv["mapping"]
        self.turn = f"{self.session}/start"
        self.open_calls: dict[str, list[str]] = {}          # tool name -> call ids awaiting a result
        self.shown = self._current_path()

    def _current_path(self) -> set[str]:
        path, node = set(), self.conv.get("current_node")
        while isinstance(node, str) and node in self.mapping and node not in path:
            path.add(node)
            parent = self.mapping[node].get("parent") if isinstance(self.mapping[node], dict) else None
            node = parent
        return path

    def _order(self) -> list[str]:
        """Node ids, roots first, each parent before its children."""
        roots = [k for k, n in self.mapping.items()
                 if not isinstance(n, dict) or not isinstance(n.get("parent"), str) or n["parent"] not in self.mapping]
        out, seen, stack = [], set(), list(reversed(roots))
        while stack:
            node_id = stack.pop()
            if node_id in seen:
                continue
            seen.add(node_id)
            out.append(node_id)
            node = self.mapping.get(node_id)
            children = node.get("children") if isinstance(node, dict) and isinstance(node.get("children"), list) else []
            stack.extend(c for c in reversed(children) if isinstance(c, str) and c in self.mapping)
        out.extend(k for k in self.mapping if k not in seen)        # unreachable nodes are kept too
        return out

    def drafts(self) -> Iterator[Draft]:
        title = self.conv.get("title")
        if isinstance(title, str) and title.strip():
            yield self.draft("title", "system", title, 0, to_utc_iso(self.conv.get("create_time")),
                             meta={"subtype": "title"})
        follows: dict[str, str | None] = {}        # node id -> the node its events follow
        made: dict[str, list[Draft]] = {}
        for node_id in self._order():
            node = self.mapping.get(node_id)
            message = node.get("message") if isinstance(node, dict) else None
            parent = node.get("parent") if isinstance(node, dict) and isinstance(node.get("parent"), str) else None
            if parent is not None and parent not in made:
                parent = follows.get(parent, parent)   # through nodes that made no event (the root keeps its id)
            drafts = list(self.message(node_id, message)) if isinstance(message, dict) else []
            for d in drafts:
                d.parent = parent
            if drafts:
                made[node_id] = drafts
            else:
                follows[node_id] = parent if parent is not None else node_id
        leaf = self._leaf(made)
        for d in made.get(leaf, ()) if leaf else ():
            d.meta = {**(d.meta or {}), "live_leaf": True}
        for drafts in made.values():
            yield from drafts

    def _leaf(self, made: dict) -> str | None:
        """The newest node on the current branch that made events."""
        node, seen = self.conv.get("current_node"), set()
        while isinstance(node, str) and node in self.mapping and node not in seen:
            if node in made:
                return node
            seen.add(node)
            node = self.mapping[node].get("parent") if isinstance(self.mapping[node], dict) else None
        return None

    def message(self, node_id: str, msg: dict) -> Iterator[Draft]:
        author = msg.get("author") if isinstance(msg.get("author"), dict) else {}
        role, name = author.get("role"), author.get("name")
        content = msg.get("content") if isinstance(msg.get("content"), dict) else {}
        ctype = content.get("content_type")
        text = _content_text(content)
        ts = to_utc_iso(msg.get("create_time"))
        meta: dict = {"content_type": ctype} if isinstance(ctype, str) and ctype not in ("text", "multimodal_text") else {}
        if node_id not in self.shown and self.shown:
            meta["branch"] = "alternate"
        metadata = msg.get("metadata") if isinstance(msg.get("metadata"), dict) else {}
        model = metadata.get("model_slug")
        if isinstance(model, str):
            meta["model"] = model
        if not text.strip():
            return                                           # a hidden system message, an empty placeholder
        recipient = msg.get("recipient")
        if role == "user":
            self.turn = f"{self.session}/{node_id}"
            yield self.draft(node_id, "user", text, 0, ts, meta=meta)
        elif role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
            self.open_calls.setdefault(recipient, []).append(node_id)
            yield self.draft(node_id, "tool_call", f"{recipient} {text}", 0, ts, meta=meta,
                             tool={"name": recipient, "call_id": node_id, "input": text})
        elif role == "assistant":
            thinking = ctype in ("thoughts", "reasoning_recap")
            shown = f"<thinking>\n{text}\n</thinking>" if thinking else text
            yield self.draft(node_id, "assistant", shown, 0, ts, meta={**meta, "thinking": True} if thinking else meta)
        elif role == "tool":
            tool = name if isinstance(name, str) and name else "tool"
            waiting = self.open_calls.get(tool)
            call_id = waiting.pop(0) if waiting else node_id
            failed = ctype == "system_error" or metadata.get("is_error") is True
            yield self.draft(node_id, "tool_result", text, 0, ts, meta=meta,
                             tool={"name": tool, "call_id": call_id, "is_error": failed})
        else:
            yield self.draft(node_id, "system", text, 0, ts, meta={**meta, "role": role if isinstance(role, str) else None})

    def draft(self, node_id: str, kind: str, text: str, part: int, ts: str | None, *, meta: dict | None = None,
              tool: dict | None = None) -> Draft:
        return Draft(kind=kind, text=text, session_id=self.session, key=f"{PREFIX}/{self.session}/{node_id}/{part}",
                     turn_id=self.turn, ts=ts, tool=tool, line=self.line, uuid=node_id, meta=meta or None)


def _content_text(content: dict) -> str:
    ctype = content.get("content_type")
    if isinstance(content.get("parts"), list):
        return "\n".join(_part_text(p) for p in content["parts"] if _part_text(p))
    if ctype == "thoughts" and isinstance(content.get("thoughts"), list):
        return "\n\n".join("\n".join(t[k] for k in ("summary", "content") if isinstance(t.get(k), str) and t[k])
                           for t in content["thoughts"] if isinstance(t, dict))
    if ctype == "tether_quote":
        head = " ".join(content[k] for k in ("title", "url") if isinstance(content.get(k), str) and content[k])
        body = content.get("text") if isinstance(content.get("text"), str) else ""
        return f"[{head}]\n{body}" if head else body
    for key in ("text", "result", "content", "model_set_context", "user_instructions", "user_profile"):
        if isinstance(content.get(key), str) and content[key]:
            if ctype == "user_editable_context":
                return "\n\n".join(content[k] for k in ("user_profile", "user_instructions")
                                   if isinstance(content.get(k), str) and content[k])
            return content[key]
    rest = {k: v for k, v in content.items() if k != "content_type"}
    return compact_json(rest) if rest else ""


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        ptype = part.get("content_type")
        if ptype == "image_asset_pointer":
            return "[image]"
        if ptype == "audio_transcription" and isinstance(part.get("text"), str):
            return part["text"]
        if ptype in ("audio_asset_pointer", "real_time_user_audio_video_asset_pointer"):
            return "[audio]"
        return flatten_content(part) if "text" in part or "type" in part else compact_json(part)
    return compact_json(part) if part is not None else ""
