"""Time-range markers: what an evicted span leaves behind (paper 5.2).

A marker is a pointer, not a summary: the seq range, the time range, how
many events, a few topic hints that tell this span apart (terms frequent in
the span but rare in the store) and the directive to get it back, e.g.

  [Events 812–947 (12:03–12:41) evicted. Topics: docker build, ssl certs.
   Use recall("docker build ssl") or trace show 812..947.]

Adjacent markers merge into one covering the union (topics capped), so the
marker overhead does not grow with the number of compaction cycles.

The show directive names the exact ranges when there are few (`trace show
812..830,835..947`), so following it prints what was evicted and nothing
else; with many it names the covering span and the session.

Topic hints are words a person would search for: escape debris (`\\nexport`
read as `nexport`), user names (a home directory's, a prompt's, the owner
and group of a long listing), hashes and numbers are not."""
from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from typing import Callable

from reducers.terms import query_words

TOPICS = 4
MERGED_TOPICS = 6
CANDIDATES = 24


EXACT_RANGES = 3             # more ranges than this: the directive names the span and the session
REWOUND_NAMED = 3            # rewound ranges an elision pointer names one by one
# A backslash escape left in text (JSON inside a tool output): `\nexport`
# must read as "export", not "nexport". Runs of backslashes are one escape.
_ESCAPE = re.compile(r"(?<!\\)\\+(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[nrtbfv0])")
# A home directory names its user: /home/alice, /Users/bob, C:\Users\carol,
# and a shell prompt alice@laptop:~$ — never topics.
_HOME = re.compile(r"(?:/home/|/Users/|/u/|\b[A-Za-z]:(?:\\+|/)Users(?:\\+|/))[^/\\\s'\"]+", re.IGNORECASE)
_PROMPT = re.compile(r"(?<![\w.-])[\w.-]+@[\w.-]+:(?=[~/])")
# A long listing (`ls -l`) line opens with a mode, a link count and its
# file's owner and group: user names, and a mode reads as `drwxrwxr`.
_LS_OWNER = re.compile(r"(?m)(?:^|(?<=\s))[-dlcbps][rwxsStT-]{9}[.+@]?[ \t]+\d+[ \t]+\S+[ \t]+\S+")
_HEXISH = re.compile(r"^[0-9a-f]{6,}$")
_NOISE = frozenset({"users", "home"})


def _words(text: str) -> list[str]:
    text = _ESCAPE.sub(" ", text[:20_000])
    # CJK runs whole: their pairs (2 characters) are too short to be topics,
    # and recall("a run") searches the run's pairs anyway.
    return query_words(_LS_OWNER.sub(" ", _PROMPT.sub(" ", _HOME.sub(" ", text))), pairs=False)


def _topical(w: str) -> bool:
    if len(w) < 3 or len(w) > 30 or w in _NOISE or w.isdigit() or (_HEXISH.match(w) and any(c.isdigit() for c in w)):
        return False
    digits = sum(c.isdigit() for c in w)
    return digits * 3 <= len(w)                     # e2e, s3bucket yes; a1b2c3d4, 0x7f3a no


def topic_hints(texts: list[str], df: Callable[[str], int], n_docs: int, k: int = TOPICS) -> list[str]:
    """Terms frequent in these texts and rare in the store (tf · idf)."""
    tf: Counter[str] = Counter()
    for text in texts:
        tf.update(_words(text))
    for w in [w for w in tf if not _topical(w)]:
        del tf[w]
    # Only the span's most frequent words can win; ask the store about those alone.
    frequent = [w for w, _ in tf.most_common(CANDIDATES)]
    scored = sorted(frequent, key=lambda w: (-tf[w] * math.log(1 + n_docs / (1 + df(w))), w))
    return scored[:k]


def _clock(ts: str | None, day: str | None) -> str:
    if not ts:
        return "?"
    return ts[11:16] if day and ts[:10] == day else ts[:16].replace("T", " ")


def show_selector(ranges: list[tuple[int, int]]) -> str:
    """`a..b,c..d`: what `trace show` takes to print exactly these ranges."""
    return ",".join(f"{a}..{b}" if a != b else f"{a}" for a, b in ranges)


def show_directive(ranges: list[tuple[int, int]], count: int, session_id: str | None) -> str:
    """`trace show …` for the events a marker stands for: the exact ranges
    when there are few, else their covering span. The session is named
    whenever the ranges also hold other events (another session's, or this
    session's still in context), so following it prints this session's."""
    if len(ranges) <= EXACT_RANGES:
        shown, width = ranges, sum(b - a + 1 for a, b in ranges)
    else:
        shown, width = [(ranges[0][0], ranges[-1][1])], ranges[-1][1] - ranges[0][0] + 1
    scope = f" --session {session_id}" if session_id and count < width else ""
    return f"trace show {show_selector(shown)}{scope}"


def marker_text(seq_from: int, seq_to: int, ts_from: str | None, ts_to: str | None, count: int,
                topics: list[str], session_id: str | None = None,
                ranges: list[tuple[int, int]] | None = None) -> str:
    """The pointer. When the range holds events other than the evicted ones
    (another session's, interleaved in the log), the show directive names
    the session, so following it prints this session's events only."""
    directive = show_directive(ranges or [(seq_from, seq_to)], count, session_id)
    return (f"[Events {seq_from}–{seq_to} ({time_span(ts_from, ts_to)}) evicted: {count} event{'s' if count != 1 else ''}."
            f"{_topics_and_directive(topics, directive)}]")


def pointer_of(marker: dict) -> dict:
    """The marker as a pack shows it. A pointer marker's text is its pointer;
    a baseline's (`--strategy truncate` leaves no text, `narrative` a
    summary) gets the pointer built from its ranges after it, so the events
    it hides stay reachable from every pack that holds it. The logged marker
    is not changed."""
    info = (marker.get("meta") or {}).get("marker") or {}
    if info.get("strategy", "pointer") == "pointer" or not info.get("ranges"):
        return marker
    ranges = [(a, b) for a, b in info["ranges"]]
    pointer = marker_text(ranges[0][0], ranges[-1][1], info.get("ts_from"), info.get("ts_to"),
                          int(info.get("count") or 0), list(info.get("topics") or ()), marker.get("session_id"),
                          ranges)
    return {**marker, "text": f"{marker.get('text') or ''} {pointer}".strip()}


def _topics_and_directive(topics: list[str], show: str) -> str:
    """` Topics: a, b. Use recall("a b") or SHOW.`; with no topic words
    (a span of numbers, emoji, hashes) only SHOW: a recall of nothing finds
    nothing, and an agent would run it as written."""
    if not topics:
        return f" Use {show}."
    return f" Topics: {', '.join(topics)}. Use recall(\"{' '.join(topics[:3])}\") or {show}."


def time_span(ts_from: str | None, ts_to: str | None) -> str:
    day = ts_to[:10] if ts_to and ts_from and ts_from[:10] == ts_to[:10] else None
    return f"{_clock(ts_from, None)}–{_clock(ts_to, day)}"


def elision_text(ranges: list[tuple[int, int]], topics: list[str], session_id: str,
                 rewound: list[tuple[int, int]] = ()) -> str:
    """The pointer a render leaves for what it could not fit: every event of
    the session in these ranges is not in the pack, and `trace show` with
    them prints exactly those (the pack's own events are outside them).
    `rewound` names the ranges that hold a branch the user went back from,
    so a reader does not take them for this conversation's history."""
    span = f"event {ranges[0][0]}" if ranges[0][0] == ranges[-1][1] else f"events {ranges[0][0]}–{ranges[-1][1]}"
    show = f"trace show {show_selector(ranges)} --session {session_id}"
    branch = ""
    if rewound:
        named = ", ".join(f"{a}–{b}" if a != b else f"{a}" for a, b in rewound[:REWOUND_NAMED])
        more = f" and {len(rewound) - REWOUND_NAMED} more" if len(rewound) > REWOUND_NAMED else ""
        one = len(rewound) == 1 and rewound[0][0] == rewound[0][1]
        branch = (f" {'Event' if one else 'Events'} {named}{more} {'is' if one else 'are'} a rewound branch: "
                  f"an earlier attempt the user went back from, not part of this conversation.")
    return f"[Not in this pack: {span} of this session.{branch}{_topics_and_directive(topics, show)}]"


def gaps(lo: int, hi: int, blockers: list[int]) -> list[tuple[int, int]]:
    """The ranges of [lo, hi] that hold none of `blockers` (sorted)."""
    out: list[tuple[int, int]] = []
    start = lo
    for b in blockers[bisect.bisect_left(blockers, lo):bisect.bisect_right(blockers, hi)]:
        if b > start:
            out.append((start, b - 1))
        start = max(start, b + 1)
    if start <= hi:
        out.append((start, hi))
    return out


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
        text = marker_text(seq_from, seq_to, ts_from, ts_to, count, all_topics, session_id, ranges)
    elif strategy == "narrative":
        text = summary or ""
    else:
        text = ""                          # truncation leaves nothing behind
    return {"session_id": session_id, "turn_id": None, "ts": ts_to, "kind": "marker", "text": text,
            "meta": {"marker": {"strategy": strategy, "cycle": cycle, "ranges": [list(r) for r in ranges],
                                "seq_from": seq_from, "seq_to": seq_to, "ts_from": ts_from, "ts_to": ts_to,
                                "count": count, "topics": all_topics,
                                "replaces": [m["id"] for m in absorbed if m.get("id")]}}}
