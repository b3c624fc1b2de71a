"""The push pack: what the model should see next, assembled from a view of
the session and never over budget, never without the current turn.

Order is prompt-cache friendly, stable parts first:
  system / persona · task state · notes · markers (time order, then the
  pack's own pointer to what it left out) · recalled context · conversation.

On every render the deterministic reducers run over the conversation:
recalled-context blocks stripped (they were injected once), old thinking
cleared, big tool output middle-truncated, pairs normalised, old tool
results cleared. Then, while over budget, parts go in the order
reducers/fit.py gives; every event that goes is named by the pack's
elision marker — `trace show` with its ranges prints exactly the session's
events that are not in the pack. If even the current turn cut to its bones
does not fit, BudgetTooSmall says what the smallest pack needs.

Token accounting: each message costs its content's tokens plus
MESSAGE_OVERHEAD (reducers/pack_messages.py); `Pack.tokens` is that sum."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from reducers.branches import RewoundLines, abandoned_seqs
from reducers.fit import plan_order
from reducers.markers import elision_text, gaps, merge_ranges
from reducers.notices import system_shown
from reducers.pack_messages import LEAD_IN, MESSAGE_OVERHEAD, Message, build_messages
from reducers.pack_shrink import BudgetTooSmall, cut, shrink_protected
from reducers.pairs import latest_protected, normalize_pairs
from reducers.recall_block import detail_seqs, strip_recalled
from reducers.retention import Retention, clear_old_results, cleared_result
from reducers.thinking import KEEP_TURNS, clear_old_thinking
from reducers.tokens import count_tokens
from reducers.truncate import truncate_middle

__all__ = ["MESSAGE_OVERHEAD", "Message", "Pack", "SessionView", "RenderPolicy", "BudgetTooSmall", "assemble"]

TOOL_MAX_TOKENS = 2000
NOTES_CAP = 2000
PROTECTED_TOOLS = ("TodoWrite", "manage_todo_list")
FILL_TRIES = 16
TOPIC_SAMPLE = 64                 # the newest events left out name the elision marker's topics
MAX_RANGES = 6                    # an elision marker names at most this many ranges...
COALESCE_MAX_COST = 120           # ...when the history kept between them costs no more than this


@dataclass
class SessionView:
    """What the store read of a session for one render."""
    session_id: str
    system: list[dict] = field(default_factory=list)          # system and persona events, seq order
    task_states: list[dict] = field(default_factory=list)     # the newest last (older ones are not shown)
    notes: list[dict] = field(default_factory=list)           # newest first
    markers: list[dict] = field(default_factory=list)         # live logged markers, seq order
    conversation: list[dict] = field(default_factory=list)    # uncovered conversation events read, seq order
    first_seq: int | None = None      # the session's oldest event no logged marker covers
    unread_max: int | None = None     # newest uncovered conversation event left unread (None: all read)
    unread_seqs: set[int] = field(default_factory=set)   # other events known and not read (older notes…)
    rewound: RewoundLines | None = None   # lines rewinds left, learnt from the session's prompts (forks older than the read)

    @classmethod
    def of_items(cls, session_id: str, items: list[dict]) -> "SessionView":
        """The view of a whole cache (every item read)."""
        kinds: dict[str, list[dict]] = {}
        for e in items:
            kinds.setdefault(e["kind"], []).append(e)
        fixed = ("system", "persona", "task_state", "note", "marker")
        return cls(session_id,
                   system=sorted(kinds.get("system", []) + kinds.get("persona", []), key=lambda e: e["seq"]),
                   task_states=kinds.get("task_state", []), notes=kinds.get("note", [])[::-1],
                   markers=kinds.get("marker", []),
                   conversation=[e for e in items if e["kind"] not in fixed],
                   first_seq=min((e["seq"] for e in items if "seq" in e), default=None))


@dataclass(frozen=True)
class RenderPolicy:
    retention: Retention = Retention()
    tool_max_tokens: int = TOOL_MAX_TOKENS
    notes_cap: int = NOTES_CAP
    protected: tuple[str, ...] = PROTECTED_TOOLS
    keep_thinking_turns: int = KEEP_TURNS
    query: str = ""                                             # the latest request, for smart trim
    topics: Callable[[list[str]], list[str]] = lambda texts: []


@dataclass
class Elision:
    ranges: list[tuple[int, int]]
    topics: list[str]
    text: str
    seqs: list[int]                   # the events read and left out (the ranges may hold unread ones too)

    @property
    def known(self) -> int:
        return len(self.seqs)

    def as_json(self) -> dict:
        return {"id": None, "kind": "elision", "text": self.text, "ranges": [list(r) for r in self.ranges],
                "topics": self.topics}


@dataclass
class Pack:
    messages: list[Message]
    budget: int
    recalled: bool = False
    elision: Elision | None = None
    marker_ids: list[str] = field(default_factory=list)      # logged markers shown
    cleared: list[int] = field(default_factory=list)         # current-turn results cut to placeholders
    shrunk: list[int] = field(default_factory=list)          # protected messages middle-truncated to fit

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)

    @property
    def event_seqs(self) -> list[int]:
        """Every event of the session the pack shows (whole, truncated or
        as a placeholder); markers are in `marker_ids`."""
        return sorted({s for m in self.messages if m.part != "markers" for s in m.seqs})

    @property
    def recalled_seqs(self) -> list[int]:
        """The events the <recalled-context> block quotes (any session), in
        its order: read from the block as sent, so an entry cut to fit is
        not counted."""
        return list(dict.fromkeys(s for m in self.messages if m.part == "recalled" for s in detail_seqs(m.content)))

    def included(self) -> dict:
        return {"seqs": self.event_seqs, "marker_ids": self.marker_ids,
                "elided_ranges": [list(r) for r in self.elision.ranges] if self.elision else [],
                "recalled_seqs": self.recalled_seqs}


def assemble(view: SessionView, budget: int, recalled_block: str = "",
             policy: RenderPolicy = RenderPolicy()) -> Pack:
    # a rewound branch is history the model never had: out, named by the pointer
    abandoned = abandoned_seqs([*view.conversation, *view.system])
    if view.rewound is not None:
        abandoned |= {e["seq"] for e in view.conversation if view.rewound.holds(e)}
    fixed, not_shown = _fixed_parts(view, policy, abandoned)
    conv, dropped = prepare(view.conversation, policy, abandoned)
    pinned = {i for i, e in enumerate(conv) if (e.get("meta") or {}).get("pinned")}
    order = plan_order(conv, pinned, budget, policy.query)
    actions = ([("remove", u) for u in order.history] + ([("recall", None)] if recalled_block else [])
               + [("clear", i) for i in order.clear] + [("remove", u) for u in order.current])
    texts = {e["seq"]: e.get("text") or "" for e in [*view.conversation, *view.task_states, *view.notes]}
    known = set(texts) | {e["seq"] for e in view.system}

    def render(k, shrunk: dict[int, dict], topics: list[str] | None) -> Pack:
        """The pack with actions[:k] applied (or the actions whose indexes k holds)."""
        removed, clear, recall = set(), set(), bool(recalled_block)
        for what, arg in (actions[:k] if isinstance(k, int) else [actions[j] for j in k]):
            if what == "remove":
                removed.update(arg.members)
            elif what == "clear":
                clear.add(arg)
            else:
                recall = False
        kept = [shrunk.get(i) or (cleared_result(e) if i in clear else e)
                for i, e in enumerate(conv) if i not in removed]
        msgs = build_messages(kept)
        shown = {s for m in fixed for s in m.seqs if m.part != "markers"} | {s for m in msgs for s in m.seqs}
        missing = (known - shown) | dropped | not_shown | view.unread_seqs
        elision = _elision(view, missing, shown, texts, policy.topics if topics is None else (lambda _: topics),
                           abandoned)
        head = [m for m in fixed if m.part != "markers"]
        marker_lines = [m.content for m in fixed if m.part == "markers"] + ([elision.text] if elision else [])
        if marker_lines:
            seqs = [s for m in fixed if m.part == "markers" for s in m.seqs]
            head.append(Message("system", "## Evicted history (recallable)\n" + "\n".join(marker_lines),
                                seqs=seqs, part="markers"))
        recalled = [Message("user", recalled_block, part="recalled")] if recall else []
        lead_in = [Message("user", LEAD_IN)] if msgs and msgs[0].role != "user" and not recall else []
        return Pack(head + recalled + lead_in + msgs, budget, recalled=recall, elision=elision,
                    marker_ids=[m["id"] for m in view.markers if m.get("text")],
                    cleared=sorted(conv[i]["seq"] for i in clear if i not in removed),
                    shrunk=sorted(conv[i]["seq"] for i in shrunk))

    # The fewest removals that fit (removals only ever shrink the pack, up
    # to the few tokens a new range in the elision marker costs).
    lo, hi = 0, len(actions)
    if render(hi, {}, []).tokens <= budget:
        while lo < hi:
            mid = (lo + hi) // 2
            if render(mid, {}, []).tokens <= budget:
                hi = mid
            else:
                lo = mid + 1
        k = lo
        pack = render(k, {}, None)
        while pack.tokens > budget and k < len(actions):   # the real topics can cost a little more
            k += 1
            pack = render(k, {}, pack.elision.topics if pack.elision else [])
        if pack.tokens <= budget:
            applied, pack = _fill(render, actions, k, pack, budget)
            return _coalesce(render, actions, conv, applied, pack)
    return shrink_protected(conv, order, render, len(actions), budget)


def _fill(render, actions: list, k: int, pack: Pack, budget: int) -> tuple[list[int], Pack]:
    """The last removal may have freed far more than was needed (one big
    tool result): take back, most valuable first, removed units that still
    fit in what is left and sit next to what the pack keeps (one in the
    middle of what went would only split the elision marker's ranges)."""
    applied = list(range(k))
    topics = pack.elision.topics if pack.elision else []
    removed = {i for j in applied if actions[j][0] == "remove" for i in actions[j][1].members}
    tries = 0
    for j in range(k - 1, -1, -1):
        slack = budget - pack.tokens
        if slack < 8 or tries >= FILL_TRIES:
            break
        what, unit = actions[j]
        if what != "remove" or unit.cost > slack:
            continue
        if unit.members[0] - 1 in removed and unit.members[-1] + 1 in removed:
            continue
        tries += 1
        trial = render([a for a in applied if a != j], {}, topics)
        if trial.tokens <= budget:
            applied.remove(j)
            removed.difference_update(unit.members)
            pack = trial
    return applied, pack


def _coalesce(render, actions: list, conv: list[dict], applied: list[int], pack: Pack) -> Pack:
    """An elision marker naming many ranges costs more than it is worth:
    while it names more than MAX_RANGES, the history units kept between two
    ranges go too (the cheapest gap first, while it is cheap), so the ranges
    merge. Gaps holding anything that may not go (the current turn, fixed
    blocks) stay."""
    action_of = {conv[i]["seq"]: j for j, (what, u) in enumerate(actions) if what == "remove"
                 and not u.current for i in u.members}
    applied = set(applied)
    while pack.elision and len(pack.elision.ranges) > MAX_RANGES:
        shown, ranges = pack.event_seqs, pack.elision.ranges
        best, best_cost = None, None
        for (_, a), (b, _) in zip(ranges, ranges[1:]):
            inside = [s for s in shown if a < s < b]
            if not inside or any(s not in action_of for s in inside):
                continue
            acts = {action_of[s] for s in inside}
            cost = sum(actions[j][1].cost for j in acts)
            if best_cost is None or cost < best_cost:
                best, best_cost = acts, cost
        if best is None or best_cost > COALESCE_MAX_COST:      # worth more than the ranges it saves
            break
        applied |= best
        pack = render(sorted(applied), {}, pack.elision.topics)
    return pack


def prepare(events: list[dict], policy: RenderPolicy,
            abandoned: set[int] | frozenset[int] = frozenset()) -> tuple[list[dict], set[int]]:
    """The conversation as the pack shows it, and the seqs it leaves out
    (text that was only an old recalled block, results with no call, the
    events of a rewound branch)."""
    dropped = {e["seq"] for e in events if e["seq"] in abandoned}
    events = [e for e in events if e["seq"] not in dropped]
    pins = latest_protected(events, set(policy.protected))
    out = []
    for i, e in enumerate(events):
        if i in pins:
            e = {**e, "meta": {**(e.get("meta") or {}), "pinned": True}}
        if e["kind"] in ("user", "assistant") and e.get("text"):
            text = strip_recalled(e["text"])
            if text is not e["text"]:
                if not text:
                    dropped.add(e["seq"])
                    continue
                e = {**e, "text": text, "tokens": count_tokens(text)}
        if e["kind"] == "tool_result" and (e.get("tokens") or 0) > policy.tool_max_tokens:
            text = truncate_middle(e["text"], policy.tool_max_tokens, hint=f"trace show {e['seq']} --full")
            e = {**e, "text": text, "tokens": count_tokens(text)}
        out.append(e)
    out = clear_old_thinking(out, policy.keep_thinking_turns)
    normal = normalize_pairs(out)
    kept = {e["seq"] for e in normal if not (e.get("meta") or {}).get("synthetic")}
    dropped |= {e["seq"] for e in out} - kept
    return clear_old_results(normal, policy.retention), dropped


def _fixed_parts(view: SessionView, policy: RenderPolicy,
                 abandoned: set[int]) -> tuple[list[Message], set[int]]:
    """System, task state, notes and logged markers; and the seqs of the
    task states and notes they leave out (older ones, past the notes cap),
    and of system lines on a rewound branch."""
    fixed: list[Message] = []
    not_shown: set[int] = set()
    system = system_shown([e for e in view.system if e["seq"] not in abandoned])
    shown = {e["seq"] for e in system}
    not_shown.update(e["seq"] for e in view.system if e["seq"] not in shown)
    if system:
        fixed.append(Message("system", "\n\n".join(e["text"] for e in system),
                             seqs=[e["seq"] for e in system], part="system"))
    if view.task_states:                          # the latest task state is the live one
        task = view.task_states[-1]
        fixed.append(Message("system", "## Task state\n" + strip_recalled(task["text"]), seqs=[task["seq"]],
                             part="task"))
        not_shown.update(e["seq"] for e in view.task_states[:-1])
    lines, seqs, used = [], [], 0
    for note in view.notes:                       # newest first, up to the cap
        cost = note.get("tokens") or count_tokens(note["text"])
        if used + cost > policy.notes_cap:
            if lines:
                not_shown.add(note["seq"])
                continue
            text, cost = cut(note, policy.notes_cap)["text"], policy.notes_cap
        else:
            text = note["text"]
        lines.append(f"- {text}")
        seqs.append(note["seq"])
        used += cost
    if lines:
        fixed.append(Message("system", "## Notes\n" + "\n".join(lines), seqs=seqs, part="notes"))
    markers = [m for m in view.markers if m.get("text")]
    if markers:
        fixed.append(Message("system", "\n".join(m["text"] for m in markers), seqs=[m["seq"] for m in markers],
                             part="markers"))
    return fixed, not_shown


def _elision(view: SessionView, missing: set[int], shown: set[int], texts: dict[int, str],
             topics: Callable[[list[str]], list[str]], abandoned: set[int]) -> Elision | None:
    if not missing and view.unread_max is None:
        return None
    hi = max(max(missing, default=0), view.unread_max or 0)
    # From the oldest event left out; when some were not read, from the
    # oldest no logged marker covers (so the ranges do not depend on how
    # much was read, and do not repeat what a marker already points at).
    lo = min(missing, default=hi)
    if view.unread_max is not None and view.first_seq is not None:
        lo = min(lo, view.first_seq)
    ranges = gaps(lo, hi, sorted(s for s in shown if lo <= s <= hi))
    if not ranges:
        return None
    hints = topics([texts[s] for s in sorted(missing) if s in texts][-TOPIC_SAMPLE:])
    rewound = merge_ranges([(s, s) for s in abandoned & missing])
    return Elision(ranges, hints, elision_text(ranges, hints, view.session_id, rewound), sorted(missing))
