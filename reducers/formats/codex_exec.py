"""What `codex exec --json` prints: Codex's headless event stream, one
thread event per line (codex-rs/exec's ThreadEvent), the `codex` format's
other layout beside rollouts.

- `thread.started` names the session (`thread_id`); `turn.started` opens
  a turn (the prompt itself is not in the stream);
- `item.completed` carries a finished item: `agent_message` -> assistant,
  `reasoning` -> thinking, `command_execution` -> a `shell` call and its
  output (exit code kept, a non-zero one an error), `file_change`,
  `mcp_tool_call` (result or error) and `web_search` -> a call (and its
  result), `todo_list` -> task_state, `error` -> system. Older versions
  name the item's kind `item_type` (and a reply `assistant_message`);
- `turn.failed` and top-level `error` lines -> system errors;
- `item.started` / `item.updated` (the same item before it finished) and
  `turn.completed` (usage figures) are progress, not content: skipped.
  A line of a type newer than this reader is kept as a system event.

Keys carry the item id, the line and the item's digest: the same file read
again adds nothing, and a resumed run (whose item ids start over) written
into the same thread is never taken for the first."""
from __future__ import annotations

from typing import Any, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats.common import compact_json, content_digest, derived_session_id, flatten_content, tool_call_text

PREFIX = "codex-exec"
EVENT_TYPES = frozenset(("thread.started", "turn.started", "turn.completed", "turn.failed",
                         "item.started", "item.updated", "item.completed"))
_PROGRESS = ("item.started", "item.updated", "turn.completed")


def is_event(rec: Any) -> bool:
    """A line of the exec stream (a bare `error` line counts only beside the others)."""
    return isinstance(rec, dict) and "payload" not in rec and isinstance(rec.get("type"), str) and rec["type"] in EVENT_TYPES


def sniff(dicts: list[dict]) -> bool:
    events = sum(1 for d in dicts if is_event(d) or (d.get("type") == "error" and "message" in d and "payload" not in d))
    return any(is_event(d) for d in dicts) and 2 * events >= len(dicts)


class ExecStream:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.session: str | None = ctx.session
        self.turns = 0

    def record(self, line: int, rec: dict) -> Iterator[Draft | BadRecord]:
        rtype = rec.get("type")
        if rtype == "thread.started":
            if not self.ctx.session and isinstance(rec.get("thread_id"), str) and rec["thread_id"]:
                self.session = rec["thread_id"]
            return
        if self.session is None:
            self.session = derived_session_id(self.ctx.source_id, 0, rec)
        if rtype == "turn.started":
            self.turns += 1
            return
        if rtype in _PROGRESS:
            return
        if rtype == "item.completed":
            item = rec.get("item")
            if not isinstance(item, dict):
                yield BadRecord(line, "item.completed without an item object")
                return
            yield from self.item(line, item)
            return
        if rtype in ("turn.failed", "error"):
            error = rec.get("error") if isinstance(rec.get("error"), dict) else rec
            message = error.get("message")
            text = message if isinstance(message, str) and message else compact_json(error)
            yield self.draft(line, rec, "system", text, 0, meta={"subtype": "error", "event": rtype})
            return
        said = {k: v for k, v in rec.items() if k != "type"}
        yield self.draft(line, rec, "system", compact_json(said), 0, meta={"subtype": str(rtype)})

    def item(self, line: int, item: dict) -> Iterator[Draft]:
        kind = item.get("type") if isinstance(item.get("type"), str) else item.get("item_type")
        call_id = item.get("id") if isinstance(item.get("id"), str) and item["id"] else f"L{line}"
        if kind in ("agent_message", "assistant_message"):
            text = item.get("text")
            if isinstance(text, str) and text:
                yield self.draft(line, item, "assistant", text, 0)
        elif kind == "reasoning":
            text = item.get("text")
            if isinstance(text, str) and text.strip():
                yield self.draft(line, item, "assistant", f"<thinking>\n{text}\n</thinking>", 0, meta={"thinking": True})
        elif kind == "command_execution":
            command = item.get("command")
            exit_code = item.get("exit_code")
            failed = item.get("status") == "failed" or (isinstance(exit_code, int) and exit_code != 0)
            yield self.call(line, item, "shell", call_id, {"command": command})
            output = item.get("aggregated_output")
            yield self.draft(line, item, "tool_result", output if isinstance(output, str) else flatten_content(output), 1,
                             tool={"name": "shell", "call_id": call_id, "is_error": failed},
                             meta={"exit_code": exit_code} if isinstance(exit_code, int) else None)
        elif kind == "file_change":
            changes = item.get("changes")
            yield self.call(line, item, "apply_patch", call_id, {"changes": changes})
            status = item.get("status")
            yield self.draft(line, item, "tool_result", str(status) if status is not None else "", 1,
                             tool={"name": "apply_patch", "call_id": call_id, "is_error": status == "failed"})
        elif kind == "mcp_tool_call":
            name = item.get("tool") if isinstance(item.get("tool"), str) else "mcp_tool"
            server = item.get("server")
            yield self.call(line, item, name, call_id, item.get("arguments"),
                            meta={"server": server} if isinstance(server, str) else None)
            error = item.get("error")
            result = item.get("result")
            if error or result is not None:
                body = (error.get("message") if isinstance(error, dict) else error) if error else \
                    (result.get("content") if isinstance(result, dict) and "content" in result else result)
                yield self.draft(line, item, "tool_result", body if isinstance(body, str) else flatten_content(body), 1,
                                 tool={"name": name, "call_id": call_id,
                                       "is_error": bool(error) or item.get("status") == "failed"})
        elif kind == "web_search":
            yield self.call(line, item, "web_search", call_id, {"query": item.get("query")})
        elif kind == "todo_list":
            todos = item.get("items") if isinstance(item.get("items"), list) else []
            lines = [f"- [{'x' if t.get('completed') else ' '}] {t.get('text', '')}" for t in todos if isinstance(t, dict)]
            yield self.draft(line, item, "task_state", "Todos:\n" + "\n".join(lines), 0, meta={"todos": todos})
        elif kind == "error":
            message = item.get("message")
            yield self.draft(line, item, "system", message if isinstance(message, str) and message else compact_json(item),
                             0, meta={"subtype": "error"})
        else:                                   # an item kind newer than this reader: kept as written
            yield self.draft(line, item, "system", compact_json(item), 0, meta={"subtype": f"item:{kind}"})

    def call(self, line: int, item: dict, name: str, call_id: str, arguments: Any, meta: dict | None = None) -> Draft:
        return self.draft(line, item, "tool_call", tool_call_text(name, arguments), 0,
                          tool={"name": name, "call_id": call_id, "input": arguments}, meta=meta)

    def draft(self, line: int, said: dict, kind: str, text: str, part: int, *, tool: dict | None = None,
              meta: dict | None = None) -> Draft:
        assert self.session is not None
        ident = said.get("id") if isinstance(said.get("id"), str) else ""
        return Draft(kind=kind, text=text, session_id=self.session,
                     key=f"{PREFIX}/{self.session}/{ident}@{line}~{content_digest(said)}/{part}",
                     turn_id=f"{self.session}/turn{self.turns}", line=line, tool=tool, meta=meta)
