"""Claude Code transcripts written on the fly for the working-state, notes
and sweep tests: user and assistant lines, tool calls and their results."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ClaudeSession:
    session: str
    day: str = "2026-05-01"
    lines: list[dict] = field(default_factory=list)
    _n: int = 0
    _calls: int = 0

    def _stamp(self) -> dict:
        self._n += 1
        minute, second = divmod(self._n, 60)
        hour, minute = divmod(minute, 60)
        return {"sessionId": self.session, "uuid": f"{self.session}-u{self._n}",
                "timestamp": f"{self.day}T{9 + hour:02d}:{minute:02d}:{second:02d}.000Z"}

    def user(self, text: str) -> "ClaudeSession":
        self.lines.append({"type": "user", **self._stamp(), "message": {"role": "user", "content": text}})
        return self

    def assistant(self, text: str) -> "ClaudeSession":
        self.lines.append({"type": "assistant", **self._stamp(),
                           "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
        return self

    def tool(self, name: str, tool_input: dict, result: str = "ok", is_error: bool = False) -> "ClaudeSession":
        self._calls += 1
        call_id = f"toolu_{self.session}_{self._calls}"
        self.lines.append({"type": "assistant", **self._stamp(), "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}]}})
        self.lines.append({"type": "user", **self._stamp(), "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": is_error}]}})
        return self

    def write(self, path: Path, upto: int | None = None) -> Path:
        rows = self.lines if upto is None else self.lines[:upto]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path
