"""What a tool call's input says, whichever agent wrote it: the input
parsed, the command line it runs (or the patch it applies), the file it
names, and a todo list's items with their status. Shared by recall's task
conditioning, the working state and the fact extractor."""
from __future__ import annotations

import orjson

DONE_STATUSES = frozenset({"completed", "done", "cancelled", "canceled"})
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file")
_COMMAND_KEYS = ("command", "cmd", "script")
_TODO_KEYS = ("todos", "plan", "items", "todoList")
_PATCH = "*** Begin Patch"


def parsed_input(value):
    """A tool input given as JSON text, parsed (anything else as it is)."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def command_text(data) -> str:
    """The command line a call runs (argv lists joined), or the patch body
    an apply_patch call carries; "" when it is neither."""
    if isinstance(data, str):
        return data if data.startswith(_PATCH) else ""
    if not isinstance(data, dict):
        return ""
    for key in _COMMAND_KEYS:
        cmd = data.get(key)
        if isinstance(cmd, list):
            return " ".join(str(c) for c in cmd)
        if isinstance(cmd, str):
            return cmd
    patch = data.get("patch") or data.get("input")
    return patch if isinstance(patch, str) and _PATCH in patch else ""


def path_argument(data) -> str | None:
    """The file a call names in one of the usual argument names."""
    if isinstance(data, dict):
        for key in PATH_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return None


def todo_items(data) -> list[tuple[str, str]] | None:
    """(text, status) of each item of a todo list (TodoWrite, update_plan,
    manage_todo_list …), or None when the input holds no list."""
    if not isinstance(data, dict):
        return None
    items = next((data[k] for k in _TODO_KEYS if isinstance(data.get(k), list)), None)
    if items is None:
        return None
    out = []
    for item in items:
        if isinstance(item, dict):
            text = str(item.get("content") or item.get("step") or item.get("title") or item.get("activeForm") or "")
            out.append((text, str(item.get("status") or item.get("state") or "").lower()))
    return out
