"""Time-range markers: what an evicted span leaves behind (paper 5.2).

A marker is a pointer, not a summary: the seq range, the time range, how
many events, a few topic hints that tell this span apart (terms frequent in
the span but rare in the store) and the directive to get it back, e.g.

  [Events 812–947 (12:03–12:41) evicted. Topics: docker build, ssl certs.
   Use recall("docker build ssl") or trace show 812..947.]

Adjacent markers merge into one covering the union (topics capped), so the
marker overhead does not grow with the number of compaction cycles."""
from __future__ import annotations

import math
from collections import Counter
from typing import Callable

from reducers.terms import query_words

TOPICS = 4
MERGED_TOPICS = 6
CANDIDATES = 24


def topic_hints(texts: list[str], df: Callable[[str], int], n_docs: int, k: int = TOPICS) -> list[str]:
    """Terms frequent in these texts and rare in the store (tf · idf)."""
    tf: Counter[str] = Counter()
    for text in texts:
        tf.update(w for w in query_words(text[:20_000]) if len(w) >= 3 and not w.isdigit())
    # Only the span's most frequent words can win; ask the store about those alone.
    frequent = [w for w, _ in tf.most_common(CANDIDATES)]
    scored = sorted(frequent, key=lambda w: (-tf[w] * math.log(1 + n_docs / (1 + df(w))), w))
    return scored[:k]


def _clock(ts: str | None, day: str | None) -> str:
    if not ts:
        return "?"
    return ts[11:16] if day and ts[:10] == day else ts[:16].replace("T", " ")


def marker_text(seq_from: int, seq_to: int, ts_from: str | None, ts_to: str | None, count: int,
                topics: list[str], session_id: str | None = None) -> str:
    """The pointer. When the range holds events other than the evicted ones
    (another session's, interleaved in the log), the show directive names
    the session, so following it prints this session's events only."""
    day = ts_to[:10] if ts_to and ts_from and ts_from[:10] == ts_to[:10] else None
    span = f"{_clock(ts_from, None)}–{_clock(ts_to, day)}"
    topic_part = f" Topics: {', '.join(topics)}." if topics else ""
    query = " ".join(topics[:3]) if topics else "…"
    scope = f" --session {session_id}" if session_id and count < seq_to - seq_from + 1 else ""
    return (f"[Events {seq_from}–{seq_to} ({span}) evicted: {count} events.{topic_part} "
            f'Use recall("{query}") or trace show {seq_from}..{seq_to}{scope}.]')


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def seq_ranges(seqs: list[int], kept: list[int] = ()) -> list[tuple[int, int]]:
    """Ranges covering `seqs` and none of `kept` (the session's events that
    stay): gaps holding only other sessions' events are bridged, so a span
    interleaved with other sessions is still one range."""
    import bisect
    kept_sorted = sorted(kept)
    out: list[list[int]] = []
    for s in sorted(seqs):
        if out:
            a, b = out[-1]
            i = bisect.bisect_right(kept_sorted, b)
            if i >= len(kept_sorted) or kept_sorted[i] > s:      # no kept event in (b, s)
                out[-1][1] = s
                continue
        out.append([s, s])
    return [(a, b) for a, b in out]


def build_marker(session_id: str, evicted: list[dict], topics: list[str], cycle: int, strategy: str,
                 absorbed: list[dict] = (), summary: str | None = None, kept: list[int] = ()) -> dict:
    """A marker event (not yet sealed) covering `evicted` and absorbing the
    `absorbed` markers next to it; `kept` are the seqs of the session's
    events that stay in the cache."""
    infos = [(m.get("meta") or {}).get("marker", {}) for m in absorbed]
    covered = [e["seq"] for e in evicted] + [s for i in infos for a, b in i.get("ranges", []) for s in (a, b)]
    ranges = seq_ranges(covered, kept)
    all_topics = list(dict.fromkeys([*topics, *(t for i in infos for t in i.get("topics", []))]))
    all_topics = all_topics[:MERGED_TOPICS if absorbed else TOPICS]
    times = [e.get("ts") or e.get("ingested_at") for e in evicted if e.get("ts") or e.get("ingested_at")]
    times += [t for i in infos for t in (i.get("ts_from"), i.get("ts_to")) if t]
    seq_from, seq_to = ranges[0][0], ranges[-1][1]
    ts_from, ts_to = (min(times), max(times)) if times else (None, None)
    count = len(evicted) + sum(int(i.get("count") or 0) for i in infos)
    if strategy == "pointer":
        text = marker_text(seq_from, seq_to, ts_from, ts_to, count, all_topics, session_id)
    elif strategy == "narrative":
        text = summary or ""
    else:
        text = ""                          # truncation leaves nothing behind
    return {"session_id": session_id, "turn_id": None, "ts": ts_to, "kind": "marker", "text": text,
            "meta": {"marker": {"strategy": strategy, "cycle": cycle, "ranges": [list(r) for r in ranges],
                                "seq_from": seq_from, "seq_to": seq_to, "ts_from": ts_from, "ts_to": ts_to,
                                "count": count, "topics": all_topics,
                                # a marker made earlier in this cycle has no id yet (evict_span fills those in)
                                "replaces": [m["id"] for m in absorbed if "id" in m]}}}
