"""Honest time for events whose source gave none.

An event without a timestamp used to get nothing, and recency and
`--since` fell back to the time it was ingested: months-old traffic looked
brand new. Here such an event takes the time of its neighbours in the same
session (the previous timestamped event, else the next one within a short
look-ahead), else the file's own time; `meta.ts_inferred` says which, so
`show` can tell a reader the time is inferred. Order is never changed:
drafts leave in the order they came."""
from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Iterable, Iterator

from reducers.drafts import Draft

LOOKAHEAD = 512            # drafts held back while waiting for a session's first timestamp
PREVIOUS, NEXT, FILE = "previous event", "next event", "file time"


def infer_times(drafts: Iterable[Draft], fallback_ts: str, lookahead: int = LOOKAHEAD) -> Iterator[Draft]:
    """`drafts` with every missing `ts` filled and marked in meta."""
    last: dict[str, str] = {}
    held: deque[Draft] = deque()                  # in order; the head is a draft still without a time
    waiting: dict[str, int] = {}                  # session -> drafts held for it without a time

    def release() -> Iterator[Draft]:
        while held and not _untimed(held[0]):
            yield held.popleft()

    for d in drafts:
        if not isinstance(d, Draft):              # a bad record: passed along in its place
            if held:
                held.append(d)
            else:
                yield d
            continue
        if d.ts is None and d.session_id in last:
            d = _inferred(d, last[d.session_id], PREVIOUS)
        if d.ts is not None:
            last[d.session_id] = d.ts
            if waiting.pop(d.session_id, 0):
                for i, h in enumerate(held):          # the session's earlier drafts take this time
                    if _untimed(h) and h.session_id == d.session_id:
                        held[i] = _inferred(h, d.ts, NEXT)
            if not held:
                yield d
                continue
            held.append(d)
            yield from release()
            continue
        held.append(d)
        waiting[d.session_id] = waiting.get(d.session_id, 0) + 1
        while len(held) > lookahead:              # waited long enough: the oldest takes the file's time
            head = held.popleft()
            if _untimed(head):
                waiting[head.session_id] -= 1
                head = _inferred(head, fallback_ts, FILE)
            yield head
            yield from release()
    for h in held:
        yield _inferred(h, fallback_ts, FILE) if _untimed(h) else h


def _untimed(item) -> bool:
    return isinstance(item, Draft) and item.ts is None


def _inferred(d: Draft, ts: str, how: str) -> Draft:
    return replace(d, ts=ts, meta={**(d.meta or {}), "ts_inferred": how}, merged_keys=list(d.merged_keys))

