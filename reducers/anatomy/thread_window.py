"""One thread's context as a transcript shows it: the drafts since its
last compaction (the main conversation's, one sub-agent's, or one
conversation of a capture), tallied per slice as they arrive, so a call's
record is a snapshot of it.

A compaction the transcript records (Claude Code compact_boundary, Codex
compacted / context_compacted, an Anthropic compaction block) starts the
next cycle: the window restarts after it, or with it when it carries the
summary that replaces the earlier turns (Codex's `compacted` message, an
Anthropic compaction block), which every later call is sent. Events the log keeps that no
call was sent stay out: a capture's other traffic, a session's title, and
in a Claude Code transcript the `summary` lines (the titles its resume
list shows), queued input (it reaches the model later as its own user
line or attachment), the SDK stream's `init` and `result` lines (the
run's settings and its outcome), and the session state Claude Code keeps
beside the conversation (the prompt a resume offers, linked PRs and
artifacts, the worktree entered, a relocation, a background task's
result line)."""
from __future__ import annotations

from dataclasses import dataclass, field

from reducers.anatomy.slices import Measure, carve, recognisable
from reducers.drafts import Draft
from reducers.event_kinds import SESSION_STATE

BOUNDARIES = frozenset({"compact_boundary", "compacted", "compaction"})
# boundaries whose text is the summary that stands for what was compacted, sent with every later call
# (Claude Code writes its summary as the next line instead); "[compacted]" is a boundary with none
CARRIED = frozenset({"compacted", "compaction"})
NO_SUMMARY = "[compacted]"
NOT_SENT = frozenset({"http_exchange", "title", "summary", "queue", "init", "result", *SESSION_STATE})
ASSISTANT_SIDE = frozenset({"assistant", "tool_call"})
_CONTAINER = {"user": "user", "assistant": "history", "tool_call": "history", "tool_result": "tool_results",
              "system": "system", "persona": "system", "task_state": "system", "note": "system",
              "marker": "markers", "artifact_ref": "history"}


def sent_to_model(event_meta: dict | None) -> bool:
    return not (event_meta and event_meta.get("subtype") in NOT_SENT)


@dataclass
class Window:
    session_id: str
    thread: str
    cycle: int = 0
    since_key: str | None = None
    until_key: str | None = None
    events: int = 0
    merge_group: str | None = None
    slices: dict[str, list[int]] = field(default_factory=dict)     # slice -> [bytes, tokens]
    user: tuple[str, list[tuple[str, int, int]]] | None = None     # (text, its carved pieces)
    user_line: int | None = None
    found: dict[str, int] = field(default_factory=dict)            # workspace / skills bytes
    marker_count: int = 0
    turn_id: str | None = None
    boundary: str | None = None                                    # the compaction note, until a call takes it
    last_kind: str | None = None

    def snapshot(self) -> dict:
        slices = {s: list(v) for s, v in self.slices.items()}
        user_bytes = 0
        if self.user is not None:
            for s, b, t in self.user[1]:
                _add(slices, s, b, t)
                user_bytes += b
        return {"session_id": self.session_id, "thread": self.thread, "cycle": self.cycle,
                "since_key": self.since_key, "until_key": self.until_key, "events": self.events,
                "slices": slices, "user_text": self.user[0] if self.user else None, "user_bytes": user_bytes,
                "found": dict(self.found), "markers": self.marker_count, "turn_id": self.turn_id}

    def take_boundary_note(self) -> str | None:
        note, self.boundary = self.boundary, None
        return note

    def take(self, d: Draft, measure: Measure | None) -> None:
        """Add one draft (`measure` None: keys and counts only, no slices).
        Runs for every draft of an ingest, so the common path (no heuristic
        can match) stays lean."""
        meta = d.meta
        kind = d.kind
        if kind == "system" and not sent_to_model(meta):
            return
        if kind == "system" and meta and meta.get("subtype") in BOUNDARIES:
            self.cycle += 1
            self.since_key, self.events, self.slices, self.user, self.found, self.marker_count = None, 0, {}, None, {}, 0
            self.merge_group, self.boundary = None, (d.text or "")[:300]
            self.until_key = d.key
            if meta["subtype"] not in CARRIED or not d.text or d.text == NO_SUMMARY:
                return
        self.last_kind = kind
        if self.since_key is None:
            self.since_key = d.key
        self.until_key = d.key
        if d.turn_id:
            self.turn_id = d.turn_id
        group = d.merge_group
        if not (group and group == self.merge_group and d.tool is None):
            self.events += 1                          # (streamed blocks of one message are one event)
        self.merge_group = group
        if kind == "marker":
            self.marker_count += 1
        if measure is None:
            return
        text = d.text or ""
        container = _CONTAINER.get(kind, "history")
        injected = kind == "user" and bool(meta and meta.get("injected"))
        if injected:
            container = "history"                     # harness text in the user's place
        if recognisable(text):
            pieces = self._carved(text, container, measure)
        else:
            nbytes, tokens = measure(text)
            if kind != "user" or injected:
                _add(self.slices, container, nbytes, tokens)
                return
            pieces = [(container, nbytes, tokens)]
        if kind == "user" and not injected:
            if self.user is not None:                 # the previous user message is history now
                for s, b, t in self.user[1]:
                    _add(self.slices, "history" if s == "user" else s, b, t)
            self.user, self.user_line = (text, pieces), d.line
        else:
            for s, b, t in pieces:
                _add(self.slices, s, b, t)

    def _carved(self, text: str, container: str, measure: Measure) -> list[tuple[str, int, int]]:
        carved = carve(text, container, measure)
        for f in carved.found:
            if f["slice"] in ("workspace", "skills"):
                self.found[f["slice"]] = self.found.get(f["slice"], 0) + f["bytes"]
            if f.get("what") == "marker" and container != "markers":     # (a marker event is counted as one)
                self.marker_count += 1
        return [(s, b, carved.tokens.get(s, 0)) for s, b in carved.bytes.items()]


def _add(slices: dict[str, list[int]], s: str, b: int, t: int) -> None:
    cell = slices.get(s)
    if cell is None:
        slices[s] = [b, t]
    else:
        cell[0] += b
        cell[1] += t
