"""Working state (continuity spec, Tier 1) on disk: kept by ingest, read
by `trace state show`, the push pack and agents.

    from stores.working_state import working_state
    working_state(store, "4f1c…")  # -> {"session_id", "seq", "ts", "state": {...}, "text"} or None

At ingest, `WorkingStateTracker` (an append hook) folds each appended event
into its session's state (reducers/working_state.py), starting from the
session's latest state in state.db; after each source it appends a
`task_state` event, through the append chokepoint, for every session whose
visible state changed. The event's meta carries the whole state, so the
fold can resume from the log alone (state.db is rebuilt from it)."""
from __future__ import annotations

from collections import OrderedDict

from reducers.drafts import Draft
from reducers.working_state import WorkingState, fold, render
from stores.ingest_state import IngestState, read_working_state

STATE_FORMAT = "working-state"          # the `source.format` of the task_state events it writes
_FOLDED_KINDS = frozenset({"user", "assistant", "tool_call", "tool_result"})
_REMEMBERED = 4096                      # sessions whose state is kept in memory between sources


def working_state(store, session_id: str) -> dict | None:
    """A session's latest working state, or None when it has none yet."""
    store.require()
    found = read_working_state(store.dir, session_id) or _from_log(store, session_id)
    if found is None:
        return None
    seq, data = found
    if "text" in data and "current_task" not in data:          # a task_state another tool wrote
        return {"session_id": session_id, "seq": seq, "ts": None, "state": None, "text": data["text"]}
    state = WorkingState.from_json(data)
    return {"session_id": session_id, "seq": seq, "ts": state.ts, "state": state.visible(), "text": render(state)}


def _from_log(store, session_id: str) -> tuple[int, dict] | None:
    """The session's newest task_state event found through the full-text
    index, when state.db does not (yet) know it (it is derived: a writer
    rebuilds it)."""
    from stores.index.fulltext import FulltextIndex
    from stores.log.segments import read_event_at
    index = FulltextIndex(store.dir)
    try:
        at = index.latest(session_id, ["task_state"]) if index.open() is not None else None
        event = read_event_at(store.segments_dir, *at) if at else None
        if at and (event is None or event.get("session_id") != session_id or event.get("kind") != "task_state"):
            # the hit records pointed elsewhere (a damaged or foreign hits.bin): the index's own columns
            at = index.latest(session_id, ["task_state"], from_columns=True)
            event = read_event_at(store.segments_dir, *at) if at else None
    finally:
        index.close()
    if event is None:
        return None
    data = (event.get("meta") or {}).get("working_state")
    return event["seq"], data if isinstance(data, dict) else {"text": event.get("text") or ""}


class WorkingStateTracker:
    """Folds appended events per session; `drafts()` yields the task_state
    events of sessions whose state changed since it was last written."""

    def __init__(self, state: IngestState):
        self.ingest_state = state
        self.active = True                      # off while a `trace` import (it carries its own states)
        self._states: OrderedDict[str, WorkingState] = OrderedDict()
        self._written: dict[str, dict] = {}     # session -> the visible state last written
        self._changed: dict[str, None] = {}

    def on_append(self, events: list[dict], locations, known) -> None:
        if not self.active:
            return
        for e in events:
            if e["kind"] not in _FOLDED_KINDS:
                continue
            sid = e["session_id"]
            fold(self._state(sid), e)
            self._changed[sid] = None

    def _state(self, sid: str) -> WorkingState:
        state = self._states.get(sid)
        if state is not None:
            self._states.move_to_end(sid)
            return state
        found = self.ingest_state.working_state(sid)
        state = WorkingState.from_json(found[1]) if found else WorkingState()
        self._written[sid] = state.visible()
        self._states[sid] = state
        while len(self._states) > _REMEMBERED:
            gone, _ = self._states.popitem(last=False)
            self._written.pop(gone, None)
            self._changed.pop(gone, None)
        return state

    def drafts(self) -> list[Draft]:
        """One task_state draft per session whose visible state changed."""
        out = []
        for sid in self._changed:
            state = self._states.get(sid)
            if state is None or not state.worth_keeping() or state.visible() == self._written.get(sid):
                continue
            self._written[sid] = state.visible()
            out.append(Draft(kind="task_state", text=render(state), session_id=sid,
                             key=f"{STATE_FORMAT}/{sid}/{state.seq}", ts=state.ts,
                             meta={"working_state": state.as_json()}))
        self._changed.clear()
        return out
