"""Cutting what may not go: when every removal is made and the pack is
still over budget, the current prompt, the newest pair and the last reply
are middle-truncated (reducers/truncate.py: head and tail kept, a pointer to
the whole with `trace show`), largest first, never below FLOOR tokens; a
call keeps valid arguments (its longest strings are cut). If even the floor
is over budget, that floor is the smallest pack, and BudgetTooSmall names it."""
from __future__ import annotations

import orjson

from reducers.pack_messages import MESSAGE_OVERHEAD, logged_call_tokens
from reducers.tokens import count_tokens
from reducers.truncate import truncate_middle

FLOOR = 64                        # a protected message is never cut below this many tokens


class BudgetTooSmall(ValueError):
    def __init__(self, needed: int, budget: int, parts: dict[str, int]):
        shown = ", ".join(f"{k} {v}" for k, v in parts.items() if v)
        super().__init__(f"the smallest pack for this session needs {needed} tokens ({shown}) but the budget "
                         f"is {budget}; raise --budget to at least {needed}")
        self.needed = needed
        self.parts = parts


def shrink_protected(conv, order, render, k: int, budget: int):
    """Every removal made and still over: cut the protected messages (the
    current prompt, the newest pair, the last reply) in the middle, largest
    first, never below FLOOR tokens. If that cannot fit, the smallest pack
    is every one of them at the floor: returned when it fits, else named."""
    cuttable = [i for u in order.protected for i in u.members
                if conv[i]["kind"] in ("user", "assistant", "tool_result", "tool_call")
                and not (conv[i].get("meta") or {}).get("pinned")]
    shrunk: dict[int, dict] = {}
    pack = render(k, shrunk, None)
    left = list(cuttable)
    while pack.tokens > budget and left:
        sizes = {i: _size(shrunk.get(i) or conv[i]) for i in left}
        i = max(left, key=lambda i: sizes[i])
        shorter = cut(conv[i], max(FLOOR, sizes[i] - (pack.tokens - budget) - MESSAGE_OVERHEAD))
        if _size(shorter) >= sizes[i]:             # no gain at this size: go to the floor
            shorter = cut(conv[i], FLOOR)
        if _size(shorter) >= sizes[i] or _size(shorter) <= FLOOR:
            left.remove(i)                         # as short as it gets
        if _size(shorter) < sizes[i]:
            shrunk[i] = shorter
            pack = render(k, shrunk, None)
    if pack.tokens <= budget:
        return pack
    # The smallest pack does not depend on how much of the session was read:
    # everything that may go has gone, and its pointer names no topics.
    floor = {i: c for i in cuttable if _size(c := cut(conv[i], FLOOR)) < _size(conv[i])}
    pack = render(k, floor, None)                  # its pointer with topics to recall by, when they fit
    if pack.tokens <= budget:
        return pack
    pack = render(k, floor, [])
    if pack.tokens <= budget:
        return pack
    parts = {p: sum(m.tokens for m in pack.messages if m.part == p)
             for p in ("system", "task", "notes", "markers", "conversation")}
    # A protected tool's latest state (TodoWrite) may sit turns back and is
    # never cut: named apart, or a big one reads as "current turn".
    pinned = {e["seq"] for e in conv if (e.get("meta") or {}).get("pinned")}
    state = sum(m.tokens for m in pack.messages if m.part == "conversation" and m.seqs and set(m.seqs) <= pinned)
    raise BudgetTooSmall(pack.tokens, budget, {"system/persona": parts["system"], "task state": parts["task"],
                                               "notes": parts["notes"], "markers": parts["markers"],
                                               "protected tools' latest state": state,
                                               "current turn": parts["conversation"] - state})


def _size(e: dict) -> int:
    if e["kind"] == "tool_call":
        tool = e.get("tool") or {}
        return logged_call_tokens(tool, tool.get("input"))
    return count_tokens(e.get("text") or "")


def cut(e: dict, tokens: int) -> dict:
    """The event middle-truncated to about `tokens`, with a pointer to the
    whole: a call keeps valid arguments (its longest strings are cut)."""
    hint = f"trace show {e['seq']}" + (" --full" if e["kind"] == "tool_result" else "")
    if e["kind"] != "tool_call":
        text = truncate_middle(e["text"], tokens, hint=hint)
        return {**e, "text": text, "tokens": count_tokens(text)}
    tool = e.get("tool") or {}
    value = tool.get("input")
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    for _ in range(8):
        cost = logged_call_tokens(tool, value)
        leaves = _string_leaves(value)
        if cost <= tokens or not leaves:
            break
        path, longest = max(leaves, key=lambda leaf: len(leaf[1]))
        have = count_tokens(longest)
        if have <= FLOOR // 2:
            break
        value = _replace_leaf(value, path, truncate_middle(longest, max(FLOOR // 2, have - (cost - tokens)), hint=hint))
    cost = logged_call_tokens(tool, value)
    return {**e, "tool": {**tool, "input": value}, "tokens": cost}


def _string_leaves(value, path=()) -> list[tuple[tuple, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _string_leaves(v, path + (k,))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _string_leaves(v, path + (i,))]
    return []


def _replace_leaf(value, path: tuple, new: str):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace_leaf(value[head], rest, new)}
    return [_replace_leaf(v, rest, new) if i == head else v for i, v in enumerate(value)]
