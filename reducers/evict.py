"""Eviction: which events leave the cache, and what replaces them (Annex A.2).

While the cache is over budget − headroom, events go in this order:
1. before the hot tail (the last N turns), by age band, oldest band first
   (a band is about one budget of history): within a band tool output and
   assistant text first, then user prompts — prompts are kept recent-first
   up to USER_KEEP_TOKENS (rfc-005), so an older prompt goes only after the
   tool output and replies of its age; after what had to go, following
   tool pairs keep going while they free at most twice what was needed
   (tool output is the cheapest to get back and the dearest to keep);
2. inside the hot tail, when that was not enough: completed tool pairs and
   replies, oldest first — never a user prompt, the current turn's newest
   pair, the last event or a call still waiting for its result. A long
   current turn is still compactable.
A tool call and its results always go together; system, persona, the
latest task state, notes and markers never go; of a protected tool
(TodoWrite) and of the task state only the latest state stays, older ones
are ordinary history.

What went is replaced by one marker per run of the cache it came from,
absorbing the pointer markers in that run (markers merge across the prompts
and pinned state left between them), or, for the honest baselines, by an
extractive summary or by nothing. When the cache still cannot fit, the plan
says what stopped it. Pure: a cache in, a plan out; the store appends the
markers to the log."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from reducers.cache import NON_EVICTABLE, Cache, marker_info
from reducers.notices import is_notice, system_shown
from reducers.markers import build_marker
from reducers.pairs import latest_protected, pair_groups
from reducers.tokens import count_tokens

WEIGHTS = {"tool_result": 1.0, "tool_call": 0.8, "user": 0.5, "assistant": 0.5, "artifact_ref": 0.3}
STRATEGIES = ("pointer", "truncate", "narrative")
PROTECTED_TOOLS = ("TodoWrite", "manage_todo_list")
USER_KEEP_TOKENS = 20_000
EXTEND_LIMIT = 2.0          # the extension frees at most twice what was needed
MIN_BAND = 256
MARKER_RETRIES = 16
MARKER_ALLOWANCE = 80       # about what a pointer marker costs: freed up front, so one plan usually does


@dataclass
class Plan:
    session_id: str
    cycle: int
    markers: list[dict] = field(default_factory=list)    # new marker events, in log order
    items: list[dict] = field(default_factory=list)      # the cache after the plan
    evicted: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    fits: bool = True
    evicted_events: list[dict] = field(default_factory=list)
    stopped: str | None = None                           # why it could not fit


def _turn_key(e: dict):
    # Events with no turn (and markers planned but not yet logged) stand alone.
    return e.get("turn_id") or ("seq", e.get("seq", id(e)))


def hot_tail_start(items: list[dict], turns: int) -> int:
    """Index where the last `turns` turns begin (markers and other
    non-conversation items don't count as turns)."""
    if turns <= 0:
        return len(items)
    seen: list = []
    for i in range(len(items) - 1, -1, -1):
        e = items[i]
        if e["kind"] in NON_EVICTABLE and e["kind"] != "system":
            continue
        key = _turn_key(e)
        if key not in seen:
            if len(seen) == turns:
                return i + 1
            seen.append(key)
    return 0


@dataclass(slots=True)
class _Group:
    members: list[int]
    tokens: int
    kind: str                    # the first member's kind
    calls: int = 0
    results: int = 0
    preserved: bool = False
    band: int = 0

    @property
    def tool_pair(self) -> bool:
        return bool(self.calls or self.results)


def _groups(items: list[dict]) -> list[_Group]:
    """Evictable events grouped so that no call leaves without its results
    (reducers/pairs.py pair_groups). A task state older than the latest is
    history, evictable like the rest."""
    latest_task = max((i for i, e in enumerate(items) if e["kind"] == "task_state"), default=None)
    # the runtime's notices a pack would not show (reducers/notices.py) are history too
    system = [e for e in items if e["kind"] == "system"]
    shown = {e["seq"] for e in system_shown(system)}
    groups: list[_Group] = []
    for members in pair_groups(items):
        first = items[members[0]]
        if first["kind"] in NON_EVICTABLE and not (first["kind"] == "task_state" and members[0] != latest_task) \
                and not (is_notice(first) and first.get("seq") not in shown):
            continue
        g = _Group(members, 0, first["kind"])
        for i in members:
            e = items[i]
            g.tokens += e.get("tokens") or 0
            if e["kind"] == "tool_call":
                g.calls += 1
            elif e["kind"] == "tool_result":
                g.results += 1
        groups.append(g)
    return groups


def eviction_order(items: list[dict], hot: int, protected: frozenset[str], band_tokens: int,
                   user_keep_tokens: int = USER_KEEP_TOKENS) -> tuple[list[_Group], list[_Group], list[_Group]]:
    """(before the hot tail in eviction order, inside it in eviction order,
    what can never go)."""
    pinned = latest_protected(items, protected)
    last = len(items) - 1
    last_user = next((i for i in range(last, -1, -1) if items[i]["kind"] == "user"), -1)
    newest_call = next((i for i in range(last, max(last_user, 0) - 1, -1) if items[i]["kind"] == "tool_call"), None)
    cold, warm, kept = [], [], []
    for g in _groups(items):
        first = g.members[0]
        if (pinned and not pinned.isdisjoint(g.members)) or last in g.members:
            kept.append(g)
        elif first < hot:
            cold.append(g)
        elif g.kind == "user" or (g.calls and not g.results) or (newest_call is not None and newest_call in g.members):
            kept.append(g)
        else:
            warm.append(g)
    left = user_keep_tokens
    for g in reversed(cold):
        if g.kind == "user":
            left -= g.tokens
            if left < 0:
                break
            g.preserved = True
    seen = 0
    for g in cold:
        g.band = seen // band_tokens
        seen += g.tokens
    cold.sort(key=lambda g: (g.band, g.preserved, g.members[0]))
    return cold, warm, kept


def plan_compaction(cache: Cache, *, budget: int, headroom: int = 200, hot_turns: int = 3,
                    strategy: str = "pointer", protected: frozenset[str] = frozenset(PROTECTED_TOOLS),
                    topics: Callable[[list[dict]], list[str]] = lambda evicted: [],
                    summarize: Callable[[list[dict]], str] | None = None,
                    user_keep_tokens: int = USER_KEEP_TOKENS) -> Plan:
    items = list(cache.items)
    total = sum(e.get("tokens") or 0 for e in items)
    plan = Plan(cache.session_id, cache.cycle + 1, tokens_before=total, items=items, tokens_after=total)
    target = budget - headroom
    if total <= target:
        plan.cycle = cache.cycle
        return plan
    hot = hot_tail_start(items, hot_turns)
    cold, warm, kept = eviction_order(items, hot, frozenset(protected), max(target, MIN_BAND), user_keep_tokens)
    pinned = {i for g in kept for i in g.members}
    needed = total - target + (MARKER_ALLOWANCE if strategy == "pointer" else 0)
    for _ in range(MARKER_RETRIES):               # the markers cost tokens too: plan again, freeing that as well
        chosen = _choose(cold, warm, needed)
        after, markers, evicted = (_replace(items, {i for g in chosen for i in g.members}, pinned, plan, strategy,
                                            topics, summarize) if chosen else (items, [], []))
        tokens_after = sum(e.get("tokens") or 0 for e in after)
        if tokens_after <= target or len(chosen) == len(cold) + len(warm):
            break
        needed += tokens_after - target
    plan.items, plan.markers, plan.evicted_events = after, markers, evicted
    plan.evicted = len(evicted)
    plan.tokens_after = tokens_after
    plan.fits = tokens_after <= target
    if not plan.fits:
        pinned_tokens = sum(g.tokens for g in kept)
        fixed_tokens = sum(e.get("tokens") or 0 for e in after if e["kind"] in NON_EVICTABLE)
        plan.stopped = (f"what may not be evicted holds {tokens_after} tokens, more than --budget {budget} "
                        f"minus --headroom {headroom}: system/persona/task state/notes/markers {fixed_tokens}, "
                        f"the hot tail's prompts, newest pair and last event and each protected tool's latest "
                        f"state {pinned_tokens}; raise --budget to at least {tokens_after + headroom} "
                        f"or lower --hot-tail")
    if plan.evicted == 0:
        plan.cycle = cache.cycle
    return plan


def _choose(cold: list[_Group], warm: list[_Group], needed: int) -> list[_Group]:
    chosen: list[_Group] = []
    freed = 0
    for g in cold + warm:
        if freed >= needed:
            break
        chosen.append(g)
        freed += g.tokens
    if len(chosen) < len(cold):
        for g in cold[len(chosen):]:                  # keep going over tool pairs while cheap
            if not g.tool_pair or freed + g.tokens > EXTEND_LIMIT * needed:
                break
            chosen.append(g)
            freed += g.tokens
    return chosen


def _replace(items: list[dict], gone: set[int], pinned: set[int], plan: Plan, strategy: str, topics,
             summarize) -> tuple[list[dict], list[dict], list[dict]]:
    """The cache without the evicted events, the new markers and what they
    evicted: each run the events came from (runs are split by remaining
    tool output and replies, not by prompts, what may never go or fixed
    blocks) gets one marker, absorbing its pointer markers."""
    runs: list[list[int]] = []               # indexes of evicted events and absorbable markers, per run
    current: list[int] = []
    for i, e in enumerate(items):
        if i in gone or (strategy == "pointer" and _pointer_marker(e)):
            current.append(i)
        elif i not in pinned and e["kind"] in ("tool_call", "tool_result", "assistant", "artifact_ref"):
            if current:
                runs.append(current)
            current = []
    if current:
        runs.append(current)
    runs = [r for r in runs if any(i in gone for i in r)]
    absorbed_at = {i for r in runs for i in r if i not in gone}
    remaining = [e for i, e in enumerate(items) if i not in gone and i not in absorbed_at]
    blockers = [e["seq"] for e in remaining if e["kind"] != "marker" and "seq" in e]
    blockers += [s for e in remaining if e["kind"] == "marker" for a, b in marker_info(e).get("ranges", []) for s in (a, b)]
    starts, markers, evicted_all = {}, [], []
    for r in runs:
        evicted = [items[i] for i in r if i in gone]
        absorbed = [items[i] for i in r if i not in gone]
        summary = summarize(evicted) if strategy == "narrative" and summarize else None
        marker = build_marker(plan.session_id, evicted, topics(evicted) if strategy == "pointer" else [],
                              plan.cycle, strategy, absorbed=absorbed, summary=summary, kept=blockers)
        marker["tokens"] = count_tokens(marker["text"])
        starts[r[0]] = marker
        markers.append(marker)
        evicted_all.extend(evicted)
    out = []
    for i, e in enumerate(items):
        if i in starts:
            out.append(starts[i])
        if i not in gone and i not in absorbed_at:
            out.append(e)
    return out, markers, evicted_all


def _pointer_marker(e: dict) -> bool:
    return e["kind"] == "marker" and marker_info(e).get("strategy", "pointer") == "pointer"
