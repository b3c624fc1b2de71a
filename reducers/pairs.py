"""Tool-pair integrity (rfc-005 Decisions 5–6, Codex's normalize.rs), run on
every render: a call with no result gets a synthetic "aborted" result with a
deterministic id, a result with no call is dropped — so every rendered
message list is one an API will accept."""
from __future__ import annotations

ABORTED = "aborted"


def normalize_pairs(events: list[dict]) -> list[dict]:
    calls = {(e.get("tool") or {}).get("call_id") for e in events if e["kind"] == "tool_call"}
    answered = _answered_calls(events)
    out = []
    for i, e in enumerate(events):
        call_id = (e.get("tool") or {}).get("call_id")
        if e["kind"] == "tool_result" and call_id not in calls:
            continue                                   # orphan result: the API would reject it
        out.append(e)
        if e["kind"] == "tool_call" and i not in answered:
            out.append(synthetic_result(e))
    return _results_after_calls(out)


def _answered_calls(events: list[dict]) -> set[int]:
    """Indexes of the calls that have a result of their own: one after the
    call and before the next call with its id, or (for the first call with
    an id) one logged before it. An id seen twice (a sub-agent's file
    repeating calls its parent's log already holds) answers only the call
    its result follows; the other call gets the synthetic one."""
    answered: set[int] = set()
    latest: dict = {}                         # call id -> index of the latest call with it
    early: set = set()                        # call ids whose result came before any call
    for i, e in enumerate(events):
        cid = (e.get("tool") or {}).get("call_id")
        if e["kind"] == "tool_call":
            if cid not in latest and cid in early:
                answered.add(i)
            latest[cid] = i
        elif e["kind"] == "tool_result":
            if cid in latest:
                answered.add(latest[cid])
            else:
                early.add(cid)
    return answered


def synthetic_result(call: dict) -> dict:
    tool = call.get("tool") or {}
    return {"id": f"aborted-{call['id']}", "seq": call["seq"], "session_id": call["session_id"],
            "turn_id": call.get("turn_id"), "ts": call.get("ts"), "kind": "tool_result", "text": ABORTED,
            "tokens": 1, "tool": {"name": tool.get("name"), "call_id": tool.get("call_id"), "is_error": True},
            "meta": {"synthetic": True}}


def _results_after_calls(events: list[dict]) -> list[dict]:
    """A result must come after its call. One logged before every call with
    its id (a source that wrote them out of order) moves to just after the
    first such call. Ids may be reused (SWE-agent replays a recorded id for
    each step): a result after any call with its id stays where it is."""
    called: set = set()
    early: dict = {}                        # call id -> results still waiting for it
    out = []
    for e in events:
        cid = (e.get("tool") or {}).get("call_id")
        if e["kind"] == "tool_result" and cid not in called:
            early.setdefault(cid, []).append(e)        # normalize_pairs kept only results with a call
            continue
        out.append(e)
        if e["kind"] == "tool_call":
            called.add(cid)
            out.extend(early.pop(cid, ()))
    return out


def pair_groups(events: list[dict]) -> list[list[int]]:
    """Indexes grouped so that removing a group never orphans a call or a
    result: each tool call with its results, and each other event alone.
    A result belongs to the latest call before it with its id (ids are
    reused: SWE-agent replays one recorded id for each step); one logged
    before any call with its id joins the first such call."""
    latest: dict = {}                     # call id -> the group of the latest call with it
    early: dict = {}                      # call id -> results seen before any call with it
    groups: list[list[int]] = []
    for i, e in enumerate(events):
        kind = e["kind"]
        cid = (e.get("tool") or {}).get("call_id") if kind in ("tool_call", "tool_result") else None
        if cid is None:
            groups.append([i])
        elif kind == "tool_call":
            group = early.pop(cid, None)
            if group is None:
                group = [i]
                groups.append(group)
            else:
                group.append(i)
            latest[cid] = group
        elif cid in latest:
            latest[cid].append(i)
        elif cid in early:
            early[cid].append(i)
        else:
            early[cid] = [i]
            groups.append(early[cid])
    return [sorted(g) for g in groups]


def latest_protected(events: list[dict], protected) -> set[int]:
    """Indexes of each protected tool's latest state: its newest answered
    call with the results, and a newer call still waiting for its result.
    Older calls and results of protected tools are ordinary pairs (rfc-005
    Decision 7 keeps the tool's state, and only the latest is the state).
    Tools are known by their calls' names (results do not always carry one)."""
    if not protected:
        return set()
    calls: dict[str, list[int]] = {}          # call id -> indexes of the call and its results
    named: dict = {}                          # call id -> tool name, for protected calls
    for i, e in enumerate(events):
        if e["kind"] not in ("tool_call", "tool_result"):
            continue
        tool = e.get("tool") or {}
        cid = tool.get("call_id")
        if e["kind"] == "tool_call" and tool.get("name") in protected:
            named[cid] = tool.get("name")
            calls[cid] = [i]                  # a reused id: the latest call with it counts
        elif e["kind"] == "tool_result" and cid in calls:
            calls[cid].append(i)
    keep: set[int] = set()
    answered, pending = set(), set()
    for cid in sorted(calls, key=lambda c: -calls[c][0]):           # newest call first
        name = named[cid]
        has_result = len(calls[cid]) > 1
        if name in answered or (not has_result and name in pending):
            continue
        keep.update(calls[cid])
        (answered if has_result else pending).add(name)
    return keep
