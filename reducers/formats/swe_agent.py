"""SWE-agent trajectories ({"history": [...], "info": {...}}), read by the
`openai` parser: the history is chat messages with a few additions.

- Agents with function calling keep `tool_calls` and answer them with
  `role: tool` observations: plain chat.
- Agents that act through text keep the command in the assistant message's
  `action` and send what it printed back as a `user` message. The action is
  a tool call and that message its result, not words the user typed.
- `thought` repeats the visible text (without the fenced command): not a
  separate piece of reasoning.
- A demonstration (`is_demo`) is the harness's worked example from another
  task, not the user's words.
- The patch the agent submitted is in `info.submission`, after the history."""
from __future__ import annotations

from typing import Any


def text_action(msg: dict) -> str | None:
    """The command of an assistant message that acts through text (no tool calls)."""
    action = msg.get("action")
    if not isinstance(action, str) or not action.strip():
        return None
    if msg.get("tool_calls") or msg.get("function_call"):
        return None
    return action


def action_name(action: str) -> str:
    """A text action's tool: its command word (`open`, `edit`, `submit`, `ls`)."""
    words = action.split(None, 1)
    return words[0] if words else "action"


def is_observation(msg: dict) -> bool:
    """A user-role message that may carry an action's output (SWE-agent
    marks newer ones; older ones are told by following an action)."""
    return msg.get("role") == "user" and msg.get("message_type") in (None, "observation") and not msg.get("is_demo")


def submission(body: dict) -> tuple[str, str | None] | None:
    """(the submitted patch, the exit status) of a trajectory."""
    info = body.get("info")
    if not isinstance(info, dict):
        return None
    patch: Any = info.get("submission")
    if not isinstance(patch, str) or not patch:
        return None
    status = info.get("exit_status")
    return patch, status if isinstance(status, str) else None
