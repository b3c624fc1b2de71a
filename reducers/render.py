"""The push pack: what the model should see next, assembled from the cache
and never over budget.

Order is prompt-cache friendly, stable parts first:
  system / persona · task state · notes · markers (time order) ·
  recalled context · the conversation still in the cache.
On every render the deterministic reducers run: middle-truncation of big
tool output, tool-result retention, pair normalisation. If the result is
still over budget the oldest conversation turns go (pairs together), then
the recalled block; system, task state, notes and markers never go — if
they alone exceed the budget that is an error naming what they need.

Token accounting: each message costs its content's tokens plus
MESSAGE_OVERHEAD (role and framing); `Pack.tokens` is that sum and is
always <= budget."""
from __future__ import annotations

from dataclasses import dataclass, field

from reducers.pairs import normalize_pairs
from reducers.retention import Retention, clear_old_results
from reducers.tokens import count_tokens
from reducers.truncate import truncate_middle

MESSAGE_OVERHEAD = 4
TOOL_MAX_TOKENS = 2000


class BudgetTooSmall(ValueError):
    def __init__(self, needed: int, budget: int):
        super().__init__(f"the protected blocks (system, persona, task state, notes, markers) need "
                         f"{needed} tokens but the budget is {budget}; raise --budget to at least {needed}")
        self.needed = needed


@dataclass
class Message:
    role: str                        # system | user | assistant | tool
    content: str
    tool_calls: list[dict] = field(default_factory=list)   # [{id, name, input}]
    tool_call_id: str | None = None
    name: str | None = None
    seqs: list[int] = field(default_factory=list)
    part: str = "conversation"       # system | task | notes | markers | recalled | conversation

    @property
    def tokens(self) -> int:
        calls = sum(count_tokens(c["name"] or "") + count_tokens(_args(c["input"])) for c in self.tool_calls)
        return count_tokens(self.content) + calls + MESSAGE_OVERHEAD


@dataclass
class Pack:
    messages: list[Message]
    budget: int
    dropped_turns: int = 0
    recalled: bool = False

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)


def _args(value) -> str:
    if isinstance(value, str):
        return value
    import orjson
    return orjson.dumps(value, default=str).decode()


def assemble(items: list[dict], budget: int, recalled_block: str = "",
             retention: Retention = Retention(), tool_max_tokens: int = TOOL_MAX_TOKENS) -> Pack:
    system = [e for e in items if e["kind"] in ("system", "persona")]
    tasks = [e for e in items if e["kind"] == "task_state"]
    notes = [e for e in items if e["kind"] == "note"]
    markers = [e for e in items if e["kind"] == "marker" and e.get("text")]
    conv = [e for e in items if e["kind"] not in ("system", "persona", "task_state", "note", "marker")]

    conv = [_truncated(e, tool_max_tokens) for e in conv]
    conv = normalize_pairs(clear_old_results(conv, retention))

    fixed: list[Message] = []
    if system:
        fixed.append(Message("system", "\n\n".join(e["text"] for e in system), seqs=[e["seq"] for e in system],
                             part="system"))
    if tasks:                                     # the latest task state is the live one
        fixed.append(Message("system", "## Task state\n" + tasks[-1]["text"], seqs=[tasks[-1]["seq"]], part="task"))
    if notes:
        fixed.append(Message("system", "## Notes\n" + "\n".join(f"- {e['text']}" for e in notes),
                             seqs=[e["seq"] for e in notes], part="notes"))
    if markers:
        fixed.append(Message("system", "## Evicted history (recallable)\n" + "\n".join(e["text"] for e in markers),
                             seqs=[e["seq"] for e in markers], part="markers"))
    needed = sum(m.tokens for m in fixed)
    if needed > budget:
        raise BudgetTooSmall(needed, budget)

    turns = _turns(conv)
    recalled = [Message("user", recalled_block, part="recalled")] if recalled_block else []
    # Drop whole turns, oldest first, then the recalled block, until it fits.
    dropped = 0
    while True:
        messages = fixed + recalled + [m for t in turns for m in t]
        total = sum(m.tokens for m in messages)
        if total <= budget:
            break
        if len(turns) > 1:
            turns.pop(0)
            dropped += 1
        elif recalled:
            recalled = []
        elif turns and _shrink(turns[0], total - budget):
            continue                               # the last turn, cut in the middle to fit
        elif turns:
            turns.pop(0)
            dropped += 1
        else:
            break
    return Pack(messages, budget, dropped_turns=dropped, recalled=bool(recalled))


def _shrink(turn: list[Message], excess: int) -> bool:
    """Cut the largest message of the last remaining turn so the pack fits;
    False when that cannot work (it would leave nothing)."""
    biggest = max(turn, key=lambda m: count_tokens(m.content))
    have = count_tokens(biggest.content)
    room = have - excess - 4
    if room < 40:
        return False
    biggest.content = truncate_middle(biggest.content, room)
    return count_tokens(biggest.content) < have


def _truncated(e: dict, max_tokens: int) -> dict:
    if e["kind"] != "tool_result" or (e.get("tokens") or 0) <= max_tokens:
        return e
    text = truncate_middle(e["text"], max_tokens, hint=f"trace show {e['seq']} --full")
    return {**e, "text": text, "tokens": count_tokens(text)}


def _turns(conv: list[dict]) -> list[list[Message]]:
    """Conversation events -> messages, grouped by turn (a turn is dropped
    whole, so no call loses its result). Consecutive assistant text and
    tool calls of a turn become one assistant message, as APIs expect."""
    turns: list[list[Message]] = []
    current_key = object()
    for e in conv:
        key = e.get("turn_id") or ("seq", e["seq"])
        if key != current_key:
            turns.append([])
            current_key = key
        msgs = turns[-1]
        kind = e["kind"]
        tool = e.get("tool") or {}
        if kind == "user":
            msgs.append(Message("user", e["text"], seqs=[e["seq"]]))
        elif kind in ("assistant", "artifact_ref"):
            if msgs and msgs[-1].role == "assistant" and not msgs[-1].tool_calls:
                msgs[-1].content = f"{msgs[-1].content}\n\n{e['text']}".strip()
                msgs[-1].seqs.append(e["seq"])
            else:
                msgs.append(Message("assistant", e["text"], seqs=[e["seq"]]))
        elif kind == "tool_call":
            call = {"id": tool.get("call_id"), "name": tool.get("name"), "input": tool.get("input")}
            if msgs and msgs[-1].role == "assistant":
                msgs[-1].tool_calls.append(call)
                msgs[-1].seqs.append(e["seq"])
            else:
                msgs.append(Message("assistant", "", tool_calls=[call], seqs=[e["seq"]]))
        elif kind == "tool_result":
            msgs.append(Message("tool", e["text"], tool_call_id=tool.get("call_id"), name=tool.get("name"),
                                seqs=[e["seq"]]))
    return [t for t in turns if t]
