"""What replay shows: a session's records in call order, one row each, the
utilisation sparkline, and the difference between two calls' contexts."""
from __future__ import annotations

from typing import Any

from reducers.anatomy.slices import SLICES

SPARKS = "▁▂▃▄▅▆▇█"


def in_call_order(records: list[dict]) -> list[dict]:
    """Records by time, then as appended: a record without a time keeps
    the place of the one before it (transcript fixtures trim times)."""
    keyed = []
    carried = ""
    for i, r in enumerate(records):
        ts = r.get("ts") if isinstance(r.get("ts"), str) and r["ts"][:1].isdigit() else None
        carried = ts or carried
        keyed.append((carried, i, r))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [r for _, _, r in keyed]


def with_window(record: dict, window: int | None) -> dict:
    """The record with utilisation worked out against `window` when it has
    none of its own (replay --window)."""
    if window is None or record.get("window"):
        return record
    tokens = record.get("contextTokens")
    util = round(100.0 * tokens / window, 2) if isinstance(tokens, int) else None
    return {**record, "window": window, "windowSource": "option", "contextUtilPct": util}


def rows(records: list[dict]) -> list[dict]:
    """The timeline: one row per call (turn numbers count from 1)."""
    out = []
    previous_cycle: dict[Any, int] = {}
    for n, r in enumerate(records, 1):
        thread = (r.get("context") or {}).get("thread")
        cycle = r.get("compactionCycle") or 0
        compacted = thread in previous_cycle and cycle > previous_cycle[thread]
        previous_cycle[thread] = cycle
        out.append({
            "turn": n, "turnId": r.get("turnId"), "sessionId": r.get("sessionId"), "ts": r.get("ts"),
            "origin": r.get("origin"), "api": r.get("api"), "model": r.get("model"), "thread": thread,
            "contextTokens": r.get("contextTokens"), "window": r.get("window"),
            "contextUtilPct": r.get("contextUtilPct"), "compactionCycle": cycle, "compacted": compacted,
            "markerCount": r.get("markerCount"), "historyEventCount": r.get("historyEventCount"),
            "topicLabel": r.get("topicLabel"), "topicTransition": bool(r.get("topicTransition")),
            "slices": {s: (r.get("slices") or {}).get(s, {}).get("tokens", 0) for s in SLICES
                       if s in (r.get("slices") or {})},
        })
    return out


def sparkline(values: list[float | None], width: int | None = None) -> str:
    """Utilisation as block characters (0-100 %; a blank where unknown);
    squeezed to `width` characters by taking each bucket's peak."""
    if width and len(values) > width:
        size = len(values) / width
        buckets = [values[int(i * size):max(int((i + 1) * size), int(i * size) + 1)] for i in range(width)]
        values = [max((v for v in b if v is not None), default=None) for b in buckets]
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        else:
            out.append(SPARKS[min(len(SPARKS) - 1, max(0, int(v / 100.0 * len(SPARKS))))])
    return "".join(out)


def message_changes(a: dict, b: dict) -> list[dict]:
    """For records of request bodies: the messages that left and entered
    (by content digest)."""
    rows_a = [m for m in a.get("messages") or () if isinstance(m.get("i"), int)]
    rows_b = [m for m in b.get("messages") or () if isinstance(m.get("i"), int)]
    in_b = {m["digest"] for m in rows_b}
    in_a = {m["digest"] for m in rows_a}
    out = [{"change": "left", "what": "message", "index": m["i"], "role": m["role"], "bytes": m["bytes"],
            "digest": m["digest"]} for m in rows_a if m["digest"] not in in_b]
    out += [{"change": "entered", "what": "message", "index": m["i"], "role": m["role"], "bytes": m["bytes"],
             "digest": m["digest"]} for m in rows_b if m["digest"] not in in_a]
    return out


def slice_changes(a: dict, b: dict) -> dict[str, list[int]]:
    """{slice: [tokens at A, tokens at B]} for every slice either has."""
    sa, sb = a.get("slices") or {}, b.get("slices") or {}
    return {s: [sa.get(s, {}).get("tokens", 0), sb.get(s, {}).get("tokens", 0)] for s in SLICES if s in sa or s in sb}


def event_changes(events_a: list[dict], events_b: list[dict], left_out_b: list[int] = (),
                  markers_b: list[dict] = ()) -> list[dict]:
    """Events that left the context between A and B (each with why, when it
    can be told: evicted into a marker B carries, dropped from B's render
    to fit the budget) and those that entered."""
    seqs_a = {e["seq"] for e in events_a}
    seqs_b = {e["seq"] for e in events_b}
    dropped = set(left_out_b)
    out = []
    for e in events_a:
        if e["seq"] in seqs_b:
            continue
        change = {"change": "left", **brief(e)}
        marker = next((m for m in markers_b if _covers(m, e["seq"])), None)
        if marker is not None:
            info = (marker.get("meta") or {}).get("marker") or {}
            change.update(reason="evicted", marker=marker["id"], markerSeq=marker["seq"], cycle=info.get("cycle"))
        elif e["seq"] in dropped:
            change["reason"] = "dropped to fit the budget"
        elif e.get("kind") == "marker":
            change["reason"] = "marker merged or replaced"
        out.append(change)
    out += [{"change": "entered", **brief(e)} for e in events_b if e["seq"] not in seqs_a]
    return out


def _covers(marker: dict, seq: int) -> bool:
    info = (marker.get("meta") or {}).get("marker") or {}
    return any(a <= seq <= b for a, b in info.get("ranges") or ())


def brief(e: dict) -> dict:
    """An event in one line: seq, id, kind, time, tokens, a snippet."""
    text = (e.get("text") or "").replace("\n", " ")
    return {"what": "event", "seq": e["seq"], "id": e.get("id"), "kind": e.get("kind"), "ts": e.get("ts"),
            "tokens": e.get("tokens"), "snippet": text[:120] + ("…" if len(text) > 120 else "")}

