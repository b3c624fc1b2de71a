"""The pack's own pointer ("Not in this pack: …") names only what no logged
marker already points at, on a session streamed in parts and compacted
between them, the way a hook and a runtime use TRACE."""
from __future__ import annotations

from reducers.cache import Coverage, live_markers
from stores.context import compact, push_pack
from stores.store import Store
from tests.sessions import ClaudeSession


def _streamed_session(tmp_path, parts: int = 4, turns: int = 6):
    """One Claude Code session, ingested in growing parts with a compaction
    after each (each part's new request makes a new task state)."""
    s, store = ClaudeSession("st"), Store(tmp_path / "store")
    src = tmp_path / "st.jsonl"
    for p in range(parts):
        for t in range(turns):
            s.user(f"Part {p} step {t}: lower the gateway timeout in payments service {p}-{t}.")
            s.tool("Bash", {"command": f"grep -rn timeout services/payments_{p}_{t}"},
                   "\n".join(f"services/payments_{p}_{t}/cfg{k}.yaml: timeout: {k}s" for k in range(40)))
            s.assistant(f"Done with step {t} of part {p}: the timeout is now {t}s.")
        s.write(src)
        list(store.ingest([str(src)]))
        compact(store, "st", budget=900, headroom=100, hot_tail=2, reflect=False)
    return store


def test_superseded_task_states_under_a_marker_are_not_named_again(tmp_path):
    store = _streamed_session(tmp_path)
    events = [e for e in store.events() if e["session_id"] == "st"]
    states = [e["seq"] for e in events if e["kind"] == "task_state"]
    assert len(states) >= 3                                    # one per part: older ones are superseded
    pack = push_pack(store, "st", budget=6000).pack
    covered = Coverage(live_markers([e for e in events if e["kind"] == "marker"]))
    assert all(s in covered for s in states[:-1])              # the compaction marker points at them already
    elided = {s for a, b in (pack.elision.ranges if pack.elision else []) for s in range(a, b + 1)}
    assert not [s for s in elided if s in covered], "the pack's pointer repeats what a marker points at"
    shown = set(pack.event_seqs)
    assert {e["seq"] for e in events if e["kind"] != "marker"} <= shown | elided | {
        s for s in range(1, events[-1]["seq"] + 1) if s in covered}
