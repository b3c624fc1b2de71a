"""The context cache: a session's bounded working set, as a projection of
its events in the log.

Compaction never edits anything: it appends `marker` events. A marker
records the seqs it covers (as ranges) and the earlier markers it replaces
(hierarchical merging). Replaying a session's events in order through
`project` therefore rebuilds exactly the cache compaction left behind —
delete `cache/` and nothing is lost."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

NON_EVICTABLE = frozenset({"system", "persona", "task_state", "note", "marker"})


def covered_seqs(marker: dict) -> list[tuple[int, int]]:
    return [tuple(r) for r in (marker.get("meta") or {}).get("marker", {}).get("ranges", [])]


def marker_info(event: dict) -> dict:
    return (event.get("meta") or {}).get("marker") or {}


def in_ranges(seq: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= seq <= b for a, b in ranges)


class Coverage:
    """What a session's live markers cover: a seq is covered when one of
    their ranges holds it (binary search over the merged ranges)."""

    def __init__(self, markers: list[dict]):
        merged: list[list[int]] = []
        for a, b in sorted(r for m in markers for r in covered_seqs(m)):
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.ranges = [(a, b) for a, b in merged]
        self._starts = [a for a, _ in self.ranges]

    def __contains__(self, seq: int) -> bool:
        i = bisect.bisect_right(self._starts, seq) - 1
        return i >= 0 and self.ranges[i][0] <= seq <= self.ranges[i][1]

    def uncovered(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of [lo, hi] no range covers, newest first."""
        out, end = [], hi
        for a, b in reversed(self.ranges):
            if b < lo:
                break
            if a > end:
                continue
            if b < end:
                out.append((b + 1, end))
            end = a - 1
            if end < lo:
                return out
        if end >= lo:
            out.append((lo, end))
        return out


def live_markers(markers: list[dict]) -> list[dict]:
    """A session's logged markers (seq order) without those a later marker
    replaced (merged into itself)."""
    replaced = {r for m in markers for r in (marker_info(m).get("replaces") or ())}
    return [m for m in markers if m["id"] not in replaced and marker_info(m)]


@dataclass
class Cache:
    session_id: str
    items: list[dict] = field(default_factory=list)   # events and markers, in context order
    cycle: int = 0
    log_seq: int = 0                                  # last log seq this projection has seen

    @property
    def tokens(self) -> int:
        return sum(e.get("tokens") or 0 for e in self.items)

    def markers(self) -> list[dict]:
        return [e for e in self.items if e["kind"] == "marker"]


def project(session_id: str, events, cache: Cache | None = None) -> Cache:
    """Apply a session's events (seq order) to a cache: ordinary events
    join the end; a marker takes the place of what it covers and of the
    markers it replaces. (Every task state stays until compaction evicts it:
    only the latest is the session's state, the pack shows only that one,
    and reducers/evict.py evicts the older ones like any history, so the
    marker that stands for them names them.)"""
    cache = cache or Cache(session_id)
    for e in events:
        cache.log_seq = max(cache.log_seq, e["seq"])
        if e["session_id"] != session_id:
            continue
        if e["kind"] != "marker" or not marker_info(e):
            cache.items.append(e)
            continue
        info = marker_info(e)
        ranges = covered_seqs(e)
        replaced = set(info.get("replaces") or ())
        position = None
        kept = []
        for item in cache.items:
            gone = (item["kind"] == "marker" and item["id"] in replaced) or \
                   (item["kind"] != "marker" and in_ranges(item["seq"], ranges))
            if gone:
                if position is None:
                    position = len(kept)
                continue
            kept.append(item)
        kept.insert(len(kept) if position is None else position, e)
        cache.items = kept
        cache.cycle = max(cache.cycle, int(info.get("cycle") or 0))
    return cache
