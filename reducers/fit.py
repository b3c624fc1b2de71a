"""What a push pack gives up, in order, when it must shrink to its budget.

The conversation is cut into units that never split a pair (a tool call
with its results) and ranked:

1. history (everything before the current turn), by age band, oldest band
   first (a band is about one budget of history). A unit that bears on the
   latest request (BM25 over the pack's own units, reducers/smart_trim.py,
   at least half the best score) counts one band younger. Within a band
   tool output and assistant text go before user prompts — prompts are
   kept recent-first up to USER_KEEP_TOKENS (rfc-005) — and, within those,
   the least relevant go first, then the oldest;
2. the recalled-context block;
3. the current turn (from the latest user message on): its old tool results
   are cleared to placeholders, oldest first, then its oldest units go.

Never ranked: the current turn's user message, its newest pair, the last
event, and each protected tool's latest state. If the pack still does not
fit, the renderer middle-truncates those (reducers/render.py) or says what
the smallest pack needs."""
from __future__ import annotations

from dataclasses import dataclass, field

from reducers.pack_messages import args_text, event_cost
from reducers.pairs import pair_groups
from reducers.smart_trim import relevance

USER_KEEP_TOKENS = 20_000
MIN_BAND = 256
RELEVANT = 0.5               # of the best BM25 score: enough to count one band younger


@dataclass
class Unit:
    members: list[int]            # indexes into the conversation
    cost: int                     # estimated tokens it adds to the pack
    current: bool = False         # in the current turn
    protected: bool = False
    preserved: bool = False       # a user prompt among the newest USER_KEEP_TOKENS of them
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


def plan_order(conv: list[dict], pinned: set[int], budget: int, query: str = "",
               user_keep_tokens: int = USER_KEEP_TOKENS) -> Order:
    start = current_turn_start(conv)
    last_call = max((i for i in range(start, len(conv)) if conv[i]["kind"] == "tool_call"), default=None)
    units = []
    for members in pair_groups(conv):
        u = Unit(members, sum(event_cost(conv[i]) for i in members), current=members[0] >= start)
        u.protected = (bool(pinned.intersection(members)) or (u.current and conv[members[0]]["kind"] == "user")
                       or (last_call is not None and last_call in members) or len(conv) - 1 in members)
        units.append(u)
    _mark_preserved(conv, units, user_keep_tokens)
    history = [u for u in units if not u.current and not u.protected]
    band_tokens = max(budget, MIN_BAND)
    scores = relevance([unit_text(conv, u) for u in history], query)
    best = max(scores, default=0.0)
    seen = 0
    for u, score in zip(history, scores):
        u.relevance = score
        u.band = seen // band_tokens + (1 if score > 0 and score >= RELEVANT * best else 0)
        seen += u.cost
    history.sort(key=lambda u: (u.band, u.preserved, u.relevance, u.pos))
    current = [u for u in units if u.current and not u.protected]
    clear = [i for u in current for i in u.members if _clearable(conv[i])]
    return Order(history, sorted(clear), current, [u for u in units if u.protected])


def _mark_preserved(conv: list[dict], units: list[Unit], keep_tokens: int) -> None:
    left = keep_tokens
    for u in reversed(units):
        if conv[u.pos]["kind"] != "user":
            continue
        left -= u.cost
        if left < 0:
            break
        u.preserved = True


def _clearable(e: dict) -> bool:
    meta = e.get("meta") or {}
    return e["kind"] == "tool_result" and not meta.get("cleared") and not meta.get("synthetic")


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
