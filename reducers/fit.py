"""What a push pack gives up, in order, when it must shrink to its budget.

The conversation is cut into units that never split a pair (a tool call
with its results) and ranked:

1. history (everything before the current turn) in stretches: a turn's
   prompt alone, and its output (calls, results, replies) in runs of about
   an eighth of the budget, so a long agentic turn can go a piece at a
   time and what goes stays in few runs (the elision marker names few
   ranges). By age band, oldest band first (a band is about one budget of
   history); the few stretches that bear most on the latest request (BM25
   over the pack's own stretches, reducers/smart_trim.py: the top
   RELEVANT_UNITS, at least half the best score) count one band younger;
   within a band output goes before prompts (rfc-005 keeps prompts
   recent-first), then the least relevant, then the oldest;
2. the recalled-context block;
3. the current turn (from the latest user message on): its old tool results
   are cleared to placeholders, oldest first, then its oldest units go.

Never ranked: the current turn's user message, its newest pair, the last
event, and each protected tool's latest state. If the pack still does not
fit, the renderer middle-truncates those (reducers/pack_shrink.py) or says
what the smallest pack needs."""
from __future__ import annotations

from dataclasses import dataclass, field

from reducers.pack_messages import args_text, event_cost
from reducers.pairs import pair_groups
from reducers.retention import cleared_result
from reducers.smart_trim import relevance

MIN_BAND = 256
MIN_STRETCH = 128
RELEVANT = 0.5               # of the best BM25 score: enough to count one band younger...
RELEVANT_UNITS = 3           # ...for the few stretches that score best


@dataclass
class Unit:
    members: list[int]            # indexes into the conversation
    cost: int                     # estimated tokens it adds to the pack
    current: bool = False         # in the current turn
    protected: bool = False
    prompt: bool = False          # a history turn's user message
    band: int = 0
    relevance: float = 0.0

    @property
    def pos(self) -> int:
        return self.members[0]


@dataclass
class Order:
    history: list[Unit] = field(default_factory=list)       # removal order
    clear: list[int] = field(default_factory=list)          # current-turn results to clear, oldest first
    current: list[Unit] = field(default_factory=list)       # removal order
    protected: list[Unit] = field(default_factory=list)


def current_turn_start(conv: list[dict]) -> int:
    """Index of the latest user message (0 when there is none: the whole
    conversation is one turn)."""
    for i in range(len(conv) - 1, -1, -1):
        if conv[i]["kind"] == "user":
            return i
    return 0


def plan_order(conv: list[dict], pinned: set[int], budget: int, query: str = "") -> Order:
    start = current_turn_start(conv)
    last_call = max((i for i in range(start, len(conv)) if conv[i]["kind"] == "tool_call"), default=None)
    turn_of, turn = [], 0
    for e in conv:
        turn += e["kind"] == "user"
        turn_of.append(turn)
    history: list[Unit] = []
    current, protected = [], []
    stretch_tokens = max(budget // 8, MIN_STRETCH)
    for members in pair_groups(conv):
        cost = sum(event_cost(conv[i]) for i in members)
        is_current = members[0] >= start
        prompt = conv[members[0]]["kind"] == "user"
        if (pinned.intersection(members) or (is_current and prompt)
                or (last_call is not None and last_call in members) or len(conv) - 1 in members):
            protected.append(Unit(members, cost, current=is_current, protected=True))
        elif is_current:
            current.append(Unit(members, cost, current=True))
        elif prompt:
            history.append(Unit(members, cost, prompt=True))
        else:
            last = history[-1] if history else None
            if (last is None or last.prompt or turn_of[last.pos] != turn_of[members[0]]
                    or last.cost + cost > stretch_tokens):
                history.append(Unit(list(members), cost))
            else:
                last.members = sorted(last.members + members)
                last.cost += cost
    history.sort(key=lambda u: u.pos)
    scores = relevance([unit_text(conv, u) for u in history], query)
    best = max(scores, default=0.0)
    favoured = set(sorted((i for i, sc in enumerate(scores) if sc > 0 and sc >= RELEVANT * best),
                          key=lambda i: -scores[i])[:RELEVANT_UNITS])
    band_tokens, seen = max(budget, MIN_BAND), 0
    for i, u in enumerate(history):
        u.relevance = scores[i]
        u.band = seen // band_tokens + (1 if i in favoured else 0)
        seen += u.cost
    history.sort(key=lambda u: (u.band, u.prompt, u.relevance, u.pos))
    clear = [i for u in current for i in u.members if _clearable(conv[i])]
    return Order(history, sorted(clear), current, protected)


def _clearable(e: dict) -> bool:
    """A current-turn result worth clearing: its placeholder must cost less
    than it does (a short result like "No files found" stays as it is)."""
    meta = e.get("meta") or {}
    if e["kind"] != "tool_result" or meta.get("cleared") or meta.get("synthetic"):
        return False
    return cleared_result(e)["tokens"] < (e.get("tokens") or 0)


def unit_text(conv: list[dict], u: Unit) -> str:
    parts = []
    for i in u.members:
        e = conv[i]
        tool = e.get("tool") or {}
        if e["kind"] == "tool_call":
            parts.append(f"{tool.get('name') or ''} {args_text(tool.get('input'))}")
        else:
            parts.append(e.get("text") or "")
    return "\n".join(parts)
