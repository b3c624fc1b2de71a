"""The text a Claude Code line put in front of the model when its own
fields, not a message, carry it: attachments, system lines that report
errors, a model fallback; and which user lines the harness wrote."""
from __future__ import annotations

import re
from typing import Any

from reducers.formats.common import compact_json, flatten_content

# User lines the harness wrote, not the user (older versions mark none of them isMeta):
# kept as user lines, marked `injected`
_INJECTED = (("<teammate-message", "teammate"), ("Another Claude session sent a message:", "teammate"),
             ("<fork-boilerplate>", "fork"), ("<task-notification>", "task_notification"),
             ("[Request interrupted by user", "interrupted"), ("<local-command-stdout>", "local_command"),
             ("<local-command-stderr>", "local_command"), ("<bash-stdout>", "bash_output"),
             ("<bash-stderr>", "bash_output"))
_INJECTED_PREFIXES = tuple(prefix for prefix, _ in _INJECTED)
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def fallback_text(block: dict) -> str:
    def model(side: Any) -> str:
        return str(side.get("model", "?")) if isinstance(side, dict) else "?"
    return f"[model fallback: {model(block.get('from'))} -> {model(block.get('to'))}]"


def attachment_text(att: dict) -> str:
    """The text an attachment put in front of the model, or "" for the ones
    that only configure the session (tool and skill listings, modes, hooks
    that succeeded quietly...)."""
    atype = att["type"]
    content = att.get("content")
    if atype == "hook_additional_context":
        return flatten_content(content)
    if atype == "nested_memory" and isinstance(content, dict):
        return flatten_content(content.get("content"))
    if atype == "queued_command":
        return flatten_content(att.get("prompt"))
    if atype == "edited_text_file":
        return flatten_content(att.get("snippet"))
    if atype == "file" and isinstance(content, dict) and isinstance(content.get("file"), dict):
        return flatten_content(content["file"].get("content"))        # an @-mentioned file, as read
    if atype == "invoked_skills" and isinstance(att.get("skills"), list):
        return "\n\n".join(flatten_content(s.get("content")) for s in att["skills"] if isinstance(s, dict))
    if atype == "hook_blocking_error" and isinstance(att.get("blockingError"), dict):
        return flatten_content(att["blockingError"].get("blockingError"))
    if atype in ("todo_reminder", "task_reminder"):
        return compact_json(content) if content else ""
    if (atype.startswith("hook_") and "error" in atype) or (   # a hook that failed: what it printed
            "hook" in atype and isinstance(att.get("exitCode"), int) and att["exitCode"] != 0):
        return "\n".join(att[k] for k in ("stderr", "stdout", "content") if isinstance(att.get(k), str) and att[k])
    if "reminder" in atype:
        for field in ("text", "content"):
            if isinstance(att.get(field), str):
                return att[field]
    text = att.get("text")                      # any other kind that shows the model a text
    return text if isinstance(text, str) else ""


def system_error_text(rec: dict) -> str:
    """The text of a system line that carries its news only as fields: an
    API error Claude Code is retrying, the errors of hooks that ran."""
    error = rec.get("error")
    if isinstance(error, dict):
        inner = error
        while isinstance(inner.get("error"), dict):      # {status, error: {type, error: {type, message}}}
            inner = inner["error"]
        message = inner.get("message") if isinstance(inner.get("message"), str) else compact_json(error)
        status = error.get("status")
        retry = (f" (retry {rec['retryAttempt']} of {rec.get('maxRetries')})"
                 if isinstance(rec.get("retryAttempt"), int) else "")
        return f"API error{f' {status}' if status is not None else ''}: {message}{retry}"
    errors = rec.get("hookErrors")
    if isinstance(errors, list) and errors:
        return "\n".join(e if isinstance(e, str) else compact_json(e) for e in errors)
    return ""


def injected_kind(text: str) -> str | None:
    """The subtype of a user line the harness wrote: a message from another
    session, a fork's boilerplate, or nothing but a system reminder."""
    if text.startswith(_INJECTED_PREFIXES):         # one call for the common case: none of them
        return next(subtype for prefix, subtype in _INJECTED if text.startswith(prefix))
    if text.lstrip().startswith("<system-reminder>") and not _REMINDER.sub("", text).strip():
        return "system_reminder"
    return None
