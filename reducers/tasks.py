"""The active task of a session, as recall's task-conditioning sees it:
the latest `task_state` event, or the latest todo list an agent wrote
(Claude Code's TodoWrite, Codex's update_plan, manage_todo_list). Open
loops are the items not yet completed."""
from __future__ import annotations

import orjson

TODO_TOOLS = ("TodoWrite", "manage_todo_list", "update_plan", "todo_write")
_DONE = {"completed", "done", "cancelled", "canceled"}


def open_loops_text(event: dict) -> str:
    """Text of what is still open in a task-state or todo event."""
    if event.get("kind") == "task_state":
        state = (event.get("meta") or {}).get("working_state")
        if isinstance(state, dict):          # kept by ingest: the task, its open steps, blockers
            from reducers.working_state import open_loops
            return open_loops(state)
        return event.get("text") or ""
    tool = event.get("tool") or {}
    data = tool.get("input")
    if isinstance(data, str):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError:
            return data
    items = []
    if isinstance(data, dict):
        for key in ("todos", "plan", "items", "todoList"):
            if isinstance(data.get(key), list):
                items = data[key]
                break
    parts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        status = str(item.get("status") or item.get("state") or "").lower()
        if status in _DONE:
            continue
        parts.append(str(item.get("content") or item.get("step") or item.get("title") or item.get("activeForm") or ""))
    return "\n".join(p for p in parts if p)
