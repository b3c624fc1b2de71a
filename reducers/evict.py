"""Eviction: which span of the cache goes, and what replaces it (Annex A.2).

While the cache is over budget − headroom:
- the hot tail (the last N turns) is never touched;
- before it, whole turns are the units — a turn's user message, tool calls
  and results go together (8.4), so no call is ever split from its result;
  non-evictable events (system, persona, task state, notes, markers) and
  protected tools' calls and results stay where they are;
- the span starts at the oldest evictable turn (so spans of successive
  cycles are adjacent and their markers merge into one) and runs until it
  frees enough; then it keeps going over the turns that follow while they
  are mostly tool traffic — eviction weight per token (Table A:
  tool_result 1.0, tool_call 0.8, user/assistant 0.5, artifact_ref 0.3) of
  at least TOOL_HEAVY (up to twice what was needed) — tool output is the
  cheapest to get back and the dearest to keep, while dialogue is evicted
  only under pressure;
  when nothing frees enough, everything before the hot tail goes;
- the span is replaced by a marker (or, for the honest baselines, by an
  extractive summary or by nothing), merged with a marker right next to it.
Pure: a plan in, a plan out; the store appends the markers to the log."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from reducers.cache import NON_EVICTABLE, Cache
from reducers.markers import build_marker
from reducers.tokens import count_tokens

WEIGHTS = {"tool_result": 1.0, "tool_call": 0.8, "user": 0.5, "assistant": 0.5, "artifact_ref": 0.3}
STRATEGIES = ("pointer", "truncate", "narrative")
PROTECTED_TOOLS = ("TodoWrite", "manage_todo_list")


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


def evictable(event: dict, protected: frozenset[str]) -> bool:
    if event["kind"] in NON_EVICTABLE:
        return False
    tool = event.get("tool") or {}
    return tool.get("name") not in protected


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


@dataclass
class _Unit:
    start: int
    end: int               # exclusive
    freed: int
    weight: float


def _units(items: list[dict], end: int, protected: frozenset[str]) -> list[_Unit]:
    units: list[_Unit] = []
    i = 0
    while i < end:
        key = _turn_key(items[i])
        j = i
        freed, weight = 0, 0.0
        while j < end and _turn_key(items[j]) == key:
            e = items[j]
            if evictable(e, protected):
                t = e.get("tokens") or 0
                freed += t
                weight += WEIGHTS.get(e["kind"], 0.5) * t
            j += 1
        if freed:
            units.append(_Unit(i, j, freed, weight))
        i = j
    return units


TOOL_HEAVY = 0.8
EXTEND_LIMIT = 2.0          # the extension frees at most twice what was needed


def choose_span(units: list[_Unit], needed: int) -> tuple[int, int]:
    """(first unit, last unit + 1): from the oldest unit, the shortest run
    that frees `needed`, extended over following tool-heavy units."""
    j, freed = 0, 0
    while j < len(units) and freed < needed:
        freed += units[j].freed
        j += 1
    while (j < len(units) and units[j].weight >= TOOL_HEAVY * units[j].freed
           and freed + units[j].freed <= EXTEND_LIMIT * needed):
        freed += units[j].freed
        j += 1
    return 0, j


def plan_compaction(cache: Cache, *, budget: int, headroom: int = 200, hot_turns: int = 3,
                    strategy: str = "pointer", protected: frozenset[str] = frozenset(PROTECTED_TOOLS),
                    topics: Callable[[list[dict]], list[str]] = lambda evicted: [],
                    summarize: Callable[[list[dict]], str] | None = None, max_spans: int = 64) -> Plan:
    items = list(cache.items)
    total = sum(e.get("tokens") or 0 for e in items)
    plan = Plan(cache.session_id, cache.cycle + 1, tokens_before=total)
    target = budget - headroom
    for _ in range(max_spans):
        if total <= target:
            break
        hot = hot_tail_start(items, hot_turns)
        units = _units(items, hot, protected)
        if not units:
            break
        a, b = choose_span(units, total - target)
        start, end = units[a].start, units[b - 1].end
        evicted = [e for e in items[start:end] if evictable(e, protected)]
        items, total = _replace_span(items, start, end, evicted, plan, strategy, topics, summarize, protected)
    plan.items = items
    plan.tokens_after = total
    plan.fits = total <= target
    if plan.evicted == 0:
        plan.cycle = cache.cycle
    return plan


def _replace_span(items, start, end, evicted, plan: Plan, strategy, topics, summarize, protected):
    gone = {id(e) for e in evicted}
    kept = items[:start] + [e for e in items[start:end] if id(e) not in gone] + items[end:]
    pos = start
    absorbed = []
    if strategy == "pointer":
        # Markers right before or after the span's place merge into the new one.
        left = pos - 1
        while left >= 0 and kept[left]["kind"] == "marker" and _strategy(kept[left]) == "pointer":
            absorbed.insert(0, kept[left])
            left -= 1
        right = pos
        while right < len(kept) and kept[right]["kind"] == "marker" and _strategy(kept[right]) == "pointer":
            absorbed.append(kept[right])
            right += 1
        pos = left + 1
        kept = kept[:pos] + kept[right:]
    summary = summarize(evicted) if strategy == "narrative" and summarize else None
    logged = [m for m in absorbed if "id" in m]
    pending = [m for m in absorbed if "id" not in m]
    kept_seqs = [e["seq"] for e in kept if e["kind"] != "marker"]
    marker = build_marker(plan.session_id, evicted, topics(evicted) if strategy == "pointer" else [],
                          plan.cycle, strategy, absorbed=absorbed, summary=summary, kept=kept_seqs)
    info = marker["meta"]["marker"]
    info["replaces"] = [m["id"] for m in logged] + [r for m in pending for r in m["meta"]["marker"]["replaces"]]
    marker["tokens"] = count_tokens(marker["text"])
    plan.markers = [m for m in plan.markers if all(m is not p for p in pending)] + [marker]
    kept.insert(pos, marker)
    plan.evicted += len(evicted)
    plan.evicted_events.extend(evicted)
    return kept, sum(e.get("tokens") or 0 for e in kept)


def _strategy(marker: dict) -> str:
    return ((marker.get("meta") or {}).get("marker") or {}).get("strategy", "pointer")
