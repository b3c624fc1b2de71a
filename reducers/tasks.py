"""The active task of a session, as recall's task-conditioning sees it:
the latest `task_state` event, or the latest todo list an agent wrote
(Claude Code's TodoWrite, Codex's update_plan, manage_todo_list). Open
loops are the items not yet completed."""
from __future__ import annotations

from reducers.tool_inputs import DONE_STATUSES, parsed_input, todo_items

TODO_TOOLS = ("TodoWrite", "manage_todo_list", "update_plan", "todo_write")


def open_loops_text(event: dict) -> str:
    """Text of what is still open in a task-state or todo event."""
    if event.get("kind") == "task_state":
        state = (event.get("meta") or {}).get("working_state")
        if isinstance(state, dict):          # kept by ingest: the task, its open steps, blockers
            from reducers.working_state import open_loops
            return open_loops(state)
        return event.get("text") or ""
    data = parsed_input((event.get("tool") or {}).get("input"))
    if isinstance(data, str):
        return data                           # not JSON: the text is all there is
    items = todo_items(data) or []
    return "\n".join(text for text, status in items if text and status not in DONE_STATUSES)
