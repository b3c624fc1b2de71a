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
  task: a user message as the source has it, marked `demonstration`.
- The patch the agent submitted is in `info.submission`, after the history.

mini-swe-agent keeps `messages` instead. Its text-acting layout
(`mini-swe-agent-1`) puts the command in a bash code block and answers
with a `<returncode>` user message; its tool-calling layout (1.1) ends
with a `role: exit` message that holds the submission."""
from __future__ import annotations

import re
from typing import Any, Iterator

from reducers.drafts import Draft
from reducers.formats.common import Conversation
from reducers.formats.openai_parts import flatten_parts, message_ts

_BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


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


def is_mini_trajectory(body: dict) -> bool:
    fmt, info = body.get("trajectory_format"), body.get("info")
    return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
        isinstance(info, dict) and "mini_version" in info)


def bash_action(msg: dict) -> str | None:
    """mini-swe-agent's text action: the bash block of an assistant message
    that calls no tool."""
    content = msg.get("content")
    if not isinstance(content, str) or msg.get("tool_calls") or msg.get("function_call"):
        return None
    m = _BASH_BLOCK.search(content)
    return m.group(1) if m and m.group(1).strip() else None


def returncode(text: str) -> int | None:
    """The exit code mini-swe-agent puts at the head of an observation."""
    m = _RETURNCODE.match(text) if text.startswith("<returncode>") else None
    return int(m.group(1)) if m else None


class TrajectoryParts:
    """The openai parser's reading of what trajectories add to chat: text
    actions, the exit message, the submission. Uses the parser's
    `open_action`, `bash_actions` and `exited`."""

    open_action: tuple[str, str] | None
    bash_actions: bool
    exited: bool

    def text_action(self, msg: dict, conv: Conversation, index: int | str, part: int, base: dict,
                    meta: dict | None) -> Iterator[Draft]:
        """The tool call of an agent acting through text, which stays open
        for the observation that follows."""
        action = text_action(msg)
        bash = bash_action(msg) if action is None and self.bash_actions else None
        self.open_action = None
        if action is None and bash is None:
            return
        command = action if action is not None else bash
        call_id, name = f"action-c{conv.index}-m{index}", "bash" if bash is not None else action_name(command)
        self.open_action = (call_id, name)
        yield Draft(kind="tool_call", text=command, tool={"name": name, "call_id": call_id, "input": command},
                    key=conv.key(index, part), meta=meta, **base)

    def exit(self, line: int, msg: dict, conv: Conversation, index: int | str) -> Draft:
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        status = extra.get("exit_status")
        self.exited = True
        return Draft(kind="system", text=flatten_parts(msg.get("content")), session_id=conv.session_id,
                     key=conv.key(index, 0), turn_id=conv.turn(), ts=message_ts(msg), line=line,
                     meta={"subtype": "exit", **({"exit_status": status} if isinstance(status, str) else {})})

    def submitted(self, line: int, conv: Conversation, patch: str, status: str | None) -> Draft:
        """SWE-agent's submitted patch: the output of a `submit` action still
        open, else a system event after the history."""
        meta = {"subtype": "submission", **({"exit_status": status} if status else {})}
        conv.begin(patch)
        if self.open_action is not None and self.open_action[1] == "submit":
            call_id, self.open_action = self.open_action[0], None
            return Draft(kind="tool_result", text=patch, tool={"name": "submit", "call_id": call_id, "is_error": False},
                         session_id=conv.session_id, key=conv.key("submission", 0), turn_id=conv.turn(), line=line,
                         meta=meta)
        return Draft(kind="system", text=patch, session_id=conv.session_id, key=conv.key("submission", 0),
                     turn_id=conv.turn(), line=line, meta=meta)
