"""What a tool call's input says, whichever agent wrote it: the input
parsed, the command line it runs (or the patch it applies), the file it
names (or the one file a shell command prints), and a todo list's items
with their status. Shared by recall's task
conditioning, the working state and the fact extractor."""
from __future__ import annotations

import shlex

import orjson

DONE_STATUSES = frozenset({"completed", "done", "cancelled", "canceled"})
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file")
_COMMAND_KEYS = ("command", "cmd", "script")
_TODO_KEYS = ("todos", "plan", "items", "todoList")
_PATCH = "*** Begin Patch"
_PRINTERS = frozenset({"cat", "bat", "batcat", "less", "more"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_CONTROL = frozenset({"|", "||", ";", "&", ">", ">>", "<", "2>", "&>", "$(", "`"})


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


def printed_file(command: str) -> str | None:
    """The one file a shell command only prints (`cat .env`, `cd app && less
    -N config.ini`, `bash -lc 'cat .env'`), so its output is that file as a
    read tool would show it; None for anything that pipes, redirects, chains
    more work or names more than one file."""
    try:
        words = shlex.split(command.strip()[:1000], posix=True)
    except ValueError:
        return None
    if len(words) == 3 and words[0] in _SHELLS and words[1] in ("-c", "-lc", "-lic"):
        return printed_file(words[2])
    if len(words) >= 3 and words[0] == "cd" and words[2] == "&&":
        words = words[3:]
    if not words or words[0] not in _PRINTERS or any(w in _CONTROL or w.startswith(("$(", "`")) for w in words):
        return None
    files = [w for w in words[1:] if not w.startswith("-")]
    return files[0] if len(files) == 1 and not any(c in files[0] for c in "*?$") else None


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
