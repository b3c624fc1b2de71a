"""The push pack: stable order, valid API shapes, never over budget."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reducers.pack_formats import to_anthropic, to_openai
from reducers.render import BudgetTooSmall, assemble
from tests.test_evict import session


def _fixed(kind, text, seq):
    return {"session_id": "s", "turn_id": None, "id": f"{kind}{seq}", "seq": seq, "kind": kind, "text": text,
            "tokens": len(text.split())}


def test_parts_come_in_prompt_cache_friendly_order():
    items = [_fixed("system", "You are a build agent.", 1), *session(3),
             _fixed("task_state", "Fix the checkout timeout", 50), _fixed("note", "PSP p99 is 2.1s", 51),
             {**_fixed("marker", "[Events 1–9 evicted…]", 52)}]
    pack = assemble(items, 4000, recalled_block="<recalled-context>x</recalled-context>")
    parts = [m.part for m in pack.messages]
    assert parts[:5] == ["system", "task", "notes", "markers", "recalled"]
    assert set(parts[5:]) == {"conversation"}


def test_budget_smaller_than_the_protected_blocks_is_an_error_naming_the_need():
    items = [_fixed("system", "word " * 500, 1), *session(2)]
    with pytest.raises(BudgetTooSmall) as err:
        assemble(items, 100)
    assert err.value.needed > 100 and "raise --budget" in str(err.value)


def test_openai_shape_has_every_call_answered():
    items = session(3)
    items.append({**items[1], "id": "x", "seq": 99, "turn_id": "s/t9",
                  "tool": {"name": "shell", "call_id": "pending", "input": {"cmd": "ls"}}})
    msgs = to_openai(assemble(items, 5000))
    answered = {m["tool_call_id"] for m in msgs if m["role"] == "tool"}
    asked = {c["id"] for m in msgs if m.get("tool_calls") for c in m["tool_calls"]}
    assert asked == answered and "pending" in asked
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            prev = next(x for x in reversed(msgs[:i]) if x["role"] != "tool")
            assert prev["role"] == "assistant" and prev.get("tool_calls")


def test_anthropic_shape_alternates_roles_and_pairs_tool_use():
    body = to_anthropic(assemble([_fixed("system", "sys", 0), *session(4)], 5000))
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    assert uses == results and body["system"] == "sys"


kinds = st.sampled_from(["user", "assistant", "tool_pair", "tool_pair", "tool_pair", "system", "note",
                         "task_state", "marker", "orphan_call"])


@settings(max_examples=120, deadline=None)
@given(spec=st.lists(st.tuples(kinds, st.integers(min_value=1, max_value=1500)), min_size=1, max_size=40),
       budget=st.integers(min_value=50, max_value=6000), block=st.booleans())
def test_any_session_any_budget_the_pack_fits_and_stays_valid(spec, budget, block):
    items, seq = [], 1
    for t, (kind, size) in enumerate(spec):
        text = " ".join(f"w{i % 97}" for i in range(size))
        base = {"session_id": "s", "turn_id": f"s/t{t}", "ts": None}
        if kind == "tool_pair":
            call = {"name": "shell", "call_id": f"c{t}"}
            items += [{**base, "id": f"e{seq}", "seq": seq, "kind": "tool_call", "text": "shell {}", "tokens": 3,
                       "tool": {**call, "input": {}}},
                      {**base, "id": f"e{seq+1}", "seq": seq + 1, "kind": "tool_result", "text": text,
                       "tokens": size, "tool": {**call, "is_error": False}}]
            seq += 2
        elif kind == "orphan_call":
            items.append({**base, "id": f"e{seq}", "seq": seq, "kind": "tool_call", "text": "shell {}", "tokens": 3,
                          "tool": {"name": "shell", "call_id": f"o{t}", "input": {}}})
            seq += 1
        else:
            small = kind in ("system", "note", "task_state", "marker")
            body = text[:200] if small else text
            items.append({**base, "id": f"e{seq}", "seq": seq, "kind": kind, "text": body,
                          "tokens": len(body.split())})
            seq += 1
    recalled = "<recalled-context>" + "r " * 100 + "</recalled-context>" if block else ""
    try:
        pack = assemble(items, budget, recalled_block=recalled)
    except BudgetTooSmall:
        return
    assert pack.tokens <= budget
    msgs = to_openai(pack)
    asked = {c["id"] for m in msgs if m.get("tool_calls") for c in m["tool_calls"]}
    answered = {m["tool_call_id"] for m in msgs if m["role"] == "tool"}
    assert asked == answered
