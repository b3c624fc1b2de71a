"""The first compaction of a long session, without reading all of it.

A session of millions of tokens that was never compacted has a working set
far over any budget: nearly all of it must go, and reading it all only to
write "it went" costs what the session is long. Instead the cache is built
from what the index can find cheaply — the fixed blocks (system, persona,
task state, notes), each protected tool's latest state, the live markers —
and the newest uncovered events, read backwards until they hold a few
budgets (stores/context/view.py), and the newest prompts before them up
to 20k tokens (rfc-005's recent-first preservation). Everything else older
is stood for by one pending pointer marker at the front of the cache (its
ranges skip what the cache holds, its count comes from the index), which
the plan then merges with what it evicts (reducers/evict.py absorbs
adjacent pointer markers). Only for the pointer strategy: the baselines
must read what they summarise."""
from __future__ import annotations

from reducers.cache import Cache, Coverage, live_markers
from reducers.evict import PROTECTED_TOOLS, USER_KEEP_TOKENS
from reducers.markers import gaps, marker_text
from reducers.tokens import count_tokens
from stores.context.reading import SessionReader
from stores.context.view import KIND_LIMIT, _tail

BULK_FACTOR = 8                  # a working set this many budgets over goes the bulk way
PROMPT_LIMIT = 2000
READ_BUDGETS = 3                 # the tail read holds about this many budgets


def bulk_cache(store, ft, session_id: str, budget: int, log_seq: int, protected=PROTECTED_TOOLS,
               user_keep_tokens: int = USER_KEEP_TOKENS) -> Cache | None:
    """The cache with everything before a tail of about READ_BUDGETS budgets
    stood for by one pending marker, or None when the tail is the session."""
    reader = SessionReader(store, ft, session_id)
    markers = live_markers(reader.read(reader.of_kinds(["marker"])))
    coverage = Coverage(markers)
    newest, first = reader.edge(newest=True), reader.edge(newest=False)
    if newest is None:
        return None
    window, unread = _tail(reader, coverage, newest, READ_BUDGETS * budget, tool_max_tokens=10 ** 9)
    if unread is None:
        return None
    fixed = reader.read(reader.of_kinds(["system", "persona", "task_state", "note"], limit=KIND_LIMIT))
    have = {e["seq"] for e in window}
    pinned = [e for e in reader.read(reader.protected_state(protected))
              if e["seq"] not in have and e["seq"] not in coverage]
    start = min(have)
    prompts = _recent_prompts(reader, coverage, start, user_keep_tokens)
    blockers = sorted({e["seq"] for e in [*fixed, *pinned, *markers, *prompts]})
    ranges = [r for a, b in reversed(coverage.uncovered(first, start - 1)) for r in gaps(a, b, blockers)]
    if not ranges:
        return None
    count = sum(reader.count(a, b) for a, b in ranges)
    cycle = max((int((m.get("meta") or {}).get("marker", {}).get("cycle") or 0) for m in markers), default=0)
    oldest = next(iter(reader.forwards(ranges[0][0], ranges[0][1], page_size=1)), [])
    ts_from = next((e.get("ts") for e in reader.read(oldest[:1])), None)
    ts_to = min(window, key=lambda e: e["seq"]).get("ts")
    text = marker_text(ranges[0][0], ranges[-1][1], ts_from, ts_to, count, [], session_id, ranges)
    pending = {"session_id": session_id, "turn_id": None, "ts": ts_to, "kind": "marker", "text": text,
               "tokens": count_tokens(text),
               "meta": {"marker": {"strategy": "pointer", "cycle": cycle + 1, "ranges": [list(r) for r in ranges],
                                   "seq_from": ranges[0][0], "seq_to": ranges[-1][1], "ts_from": ts_from,
                                   "ts_to": ts_to, "count": count, "topics": [], "replaces": []}}}
    cache = Cache(session_id, cycle=cycle, log_seq=log_seq)
    cache.items = [pending, *markers, *sorted([*fixed, *pinned, *prompts, *window], key=lambda e: e["seq"])]
    return cache


def _recent_prompts(reader: SessionReader, coverage: Coverage, before: int, keep_tokens: int) -> list[dict]:
    """The newest prompts older than the tail, up to `keep_tokens` (rfc-005
    keeps prompts recent-first up to 20k tokens: the plan decides, as for
    any cache, which of them can stay)."""
    out, used = [], 0
    locs = [loc for loc in reader.of_kinds(["user"], limit=PROMPT_LIMIT, newest_first=True, hi=before - 1)
            if loc.seq not in coverage]
    for i in range(0, len(locs), 64):
        for e in reader.read(locs[i:i + 64]):
            used += e.get("tokens") or 0
            if used > keep_tokens:
                return out
            out.append(e)
    return out
