"""The anatomy record of a `trace context` render: the pack decomposed as
the Chat Completions request it stands for, with the exact log events and
markers it carried, so replay shows what the model was sent and diff what
left it between two renders.

`contextTokens` is the pack's own count (what `trace context` budgets
with), the window its budget: contextUtilPct is how full the budget was."""
from __future__ import annotations

from reducers.anatomy.decompose import decompose
from reducers.anatomy.records import request_record
from reducers.pack_formats import to_openai
from stores.anatomy.writer import Pending, write_records
from stores.log.event_log import utc_now_iso
from stores.log.ids import IdGenerator


def pack_contents(result) -> dict:
    """Which events a pack included (stores/context/pack.py PushResult):
    every seq in message order (the events its recalled block quotes
    last), the logged markers among them, and what it left out (the events
    it read and dropped to fit, and the ranges its own pointer names)."""
    pack = result.pack
    seqs: list[int] = []
    seen: set[int] = set()
    conversation = 0
    for m in pack.messages:
        for s in getattr(m, "seqs", None) or ():
            if s not in seen:
                seen.add(s)
                seqs.append(s)
                if getattr(m, "part", "conversation") == "conversation":
                    conversation += 1
    # the <recalled-context> block quotes events by seq: they were in context too
    recalled = pack.recalled_seqs
    seqs += [s for s in recalled if s not in seen]
    shown = set(result.included["marker_ids"])
    markers = [{"id": m["id"], "seq": m["seq"]} for m in result.markers if m.get("id") in shown]
    return {"events": seqs, "markers": markers, "leftOut": pack.elision.seqs if pack.elision else [],
            "leftOutRanges": result.included["elided_ranges"], "conversationEvents": conversation,
            "recalled": recalled}


def record_render(store, result, *, fmt: str, budget: int, query: str | None = None) -> dict:
    """Write the record of one render (a PushResult); returns it."""
    from stores.context.kept_counts import kept_counts
    pack, session_id = result.pack, result.session_id
    with kept_counts(store, session_id):
        anatomy = decompose({"model": None, "messages": to_openai(pack)})
    contents = pack_contents(result)
    record = request_record(anatomy, key=f"render/{session_id}/{IdGenerator().new()}", session_id=session_id,
                            origin="render", ts=utc_now_iso(),
                            source={"command": "context", "format": fmt, "budget": budget,
                                    **({"query": result.query} if result.query else {}),
                                    **({"explicitQuery": True} if query else {})})
    record["api"] = "trace-pack"
    record["historyEventCount"] = contents["conversationEvents"]
    record["markerCount"] = len(contents["markers"])
    record["contextTokens"], record["contextTokensSource"] = pack.tokens, "pack"
    record["context"] = {"thread": "pack", "events": contents["events"], "markers": contents["markers"],
                         "leftOut": contents["leftOut"], "leftOutRanges": contents["leftOutRanges"],
                         "recalled": bool(pack.recalled), "recalledEvents": contents["recalled"]}
    written = write_records(store.dir, [Pending(record, user_text=anatomy.user_text or _last_user(pack),
                                                window=budget, window_source="budget",
                                                cycle=int(result.cycle or 0), thread="pack")], warn=store.warn)
    return written.records[0] if written.records else record


def _last_user(pack) -> str | None:
    for m in reversed(pack.messages):
        if m.role == "user" and getattr(m, "part", "conversation") == "conversation":
            return m.content
    return None
