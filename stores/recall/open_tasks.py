"""The open task of a session, as recall weighs it: the terms of the
session's latest task state (or its latest todo-tool call), found in the
full-text index and read from the log once per session."""
from __future__ import annotations

from reducers.fusion import Candidate
from reducers.tasks import TODO_TOOLS, open_loops_text
from reducers.terms import query_words


class OpenTasks:
    def __init__(self, fulltext, log_reader):
        self.fulltext = fulltext
        self._log_reader = log_reader
        self._tasks: dict[str, set[str]] = {}       # session id -> its open task's terms (empty: none)
        self._has_tasks: bool | None = None

    def known(self) -> bool:
        """Whether the store holds any task state or todo call at all (most
        chat stores do not: then no hit is read to weigh it)."""
        if self._has_tasks is None:
            ft = self.fulltext
            self._has_tasks = bool(ft.kind_count("task_state")) or ft.holds_names(list(TODO_TOOLS))
        return self._has_tasks

    def find(self, cands: list[Candidate], events: dict[int, dict]) -> None:
        """The open task of each session of these (read) candidates not yet
        weighed, all found by one index query."""
        new = {}
        for c in cands:
            e = events.get(c.seq)
            if e is not None and e["session_id"] not in self._tasks:
                new[e["session_id"]] = c.gp >> 32
        found = self.fulltext.latest_each(new, ["task_state"], ["tool_call"], list(TODO_TOOLS)) \
            if new else None
        if found is None:
            return                            # too many matches: terms() asks session by session
        for session_id in new:
            at = found.get(session_id)
            self._tasks[session_id] = self._terms_at(session_id, at) if at is not None else set()

    def terms(self, session_id: str) -> set[str]:
        """The terms of the session's open task (empty when it has none)."""
        if session_id not in self._tasks:
            at = self._latest(session_id)
            self._tasks[session_id] = self._terms_at(session_id, at) if at is not None else set()
        return self._tasks[session_id]

    def _latest(self, session_id: str, from_columns: bool = False) -> tuple[int, int] | None:
        at = self.fulltext.latest(session_id, ["task_state"], from_columns=from_columns)
        if at is None:
            at = self.fulltext.latest(session_id, ["tool_call"], list(TODO_TOOLS), from_columns=from_columns)
        return at

    def _terms_at(self, session_id: str, at: tuple[int, int]) -> set[str]:
        e = self._log_reader.event_at(*at)
        if not _is_task_of(e, session_id):
            # The hit records pointed at another event (a damaged or foreign
            # hits.bin): ask the index's own columns where the task is.
            at = self._latest(session_id, from_columns=True)
            e = self._log_reader.event_at(*at) if at is not None else None
            if not _is_task_of(e, session_id):
                return set()
        return set(query_words(open_loops_text(e)))


def _is_task_of(e: dict | None, session_id: str) -> bool:
    return e is not None and e.get("session_id") == session_id and e.get("kind") in ("task_state", "tool_call")
