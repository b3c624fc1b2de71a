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
            return open_loops(state)
        return event.get("text") or ""
    data = parsed_input((event.get("tool") or {}).get("input"))
    if isinstance(data, str):
        return data                           # not JSON: the text is all there is
    items = todo_items(data) or []
    return "\n".join(text for text, status in items if text and status not in DONE_STATUSES)


def open_loops(state_json: dict) -> str:
    """What is still open in a kept working state (the task, the open steps
    of its todo list, blockers): the terms recall's task conditioning should
    favour. Earlier requests are not open loops. (Here, not in
    reducers/working_state.py, whose patterns cost a cold recall ~5 ms to
    compile.)"""
    parts = [state_json.get("current_task") or ""]
    if state_json.get("todo"):
        parts += string_items(state_json.get("task_chain"))
    parts += string_items(state_json.get("blockers"))
    return "\n".join(p for p in parts if p)


def string_items(value) -> list[str]:
    """The strings of a JSON list (nothing for anything else)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
