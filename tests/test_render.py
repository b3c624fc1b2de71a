"""The push pack as a pure function: stable order, valid API shapes, never
over budget, never without the current turn, and every event it leaves out
named by its elision marker."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reducers.markers import gaps
from reducers.pack_formats import to_anthropic, to_openai
from reducers.render import BudgetTooSmall, RenderPolicy, SessionView, assemble
from reducers.tokens import count_tokens
from tests.test_evict import session, turn


def _fixed(kind, text, seq):
    return {"session_id": "s", "turn_id": None, "id": f"{kind}{seq}", "seq": seq, "kind": kind, "text": text,
            "tokens": count_tokens(text)}


def _view(items, **kw) -> SessionView:
    view = SessionView.of_items("s", items)
    for k, v in kw.items():
        setattr(view, k, v)
    return view


def _pack(items, budget, block="", **policy):
    return assemble(_view(items), budget, block, RenderPolicy(**policy))


def _selected(ranges) -> set[int]:
    return {s for a, b in ranges for s in range(a, b + 1)}


def assert_valid(pack, items, budget):
    """The Bar, for one pack: within budget, the latest prompt in it, pairs
    intact in order, and every left-out event inside the elision ranges
    while no shown event is."""
    assert pack.tokens <= budget
    msgs = to_openai(pack)
    asked = [c["id"] for m in msgs if m.get("tool_calls") for c in m["tool_calls"]]
    answered = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
    assert sorted(asked) == sorted(answered)
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            prev = next(x for x in reversed(msgs[:i]) if x["role"] != "tool")
            assert prev["role"] == "assistant" and m["tool_call_id"] in {c["id"] for c in prev["tool_calls"]}
    users = [e for e in items if e["kind"] == "user"]
    if users:
        assert users[-1]["seq"] in pack.event_seqs
    shown = set(pack.event_seqs)
    missing = {e["seq"] for e in items if e["kind"] != "marker"} - shown
    elided = _selected(pack.elision.ranges) if pack.elision else set()
    assert missing <= elided and not (elided & shown)


def test_parts_come_in_prompt_cache_friendly_order():
    items = [_fixed("system", "You are a build agent.", 1), *session(3),
             _fixed("task_state", "Fix the checkout timeout", 50), _fixed("note", "PSP p99 is 2.1s", 51),
             {**_fixed("marker", "[Events 1–9 evicted…]", 52)}]
    pack = _pack(items, 4000, block="<recalled-context>x</recalled-context>")
    parts = [m.part for m in pack.messages]
    assert parts[:5] == ["system", "task", "notes", "markers", "recalled"]
    assert set(parts[5:]) == {"conversation"}
    assert pack.included()["marker_ids"] == ["marker52"]


def test_a_budget_below_the_smallest_pack_names_the_minimum_and_the_minimum_works():
    items = [_fixed("system", "word " * 500, 1), *session(2)]
    with pytest.raises(BudgetTooSmall) as err:
        _pack(items, 100)
    assert err.value.needed > 100 and "raise --budget to at least" in str(err.value)
    assert_valid(_pack(items, err.value.needed), items, err.value.needed)


def _agentic_turn(pairs: int, words: int) -> list[dict]:
    """One prompt (seq 1) and `pairs` tool calls with their results (seqs 10, 11, 12, …) in one turn."""
    items = turn(1, 0)[:1]
    for k in range(pairs):
        call, result = [dict(e) for e in turn(10 + 2 * k, 0)[1:3]]
        text = f"result {k} " * words
        call.update(seq=10 + 2 * k, id=f"c{k}", tool={**call["tool"], "call_id": f"k{k}"})
        result.update(seq=11 + 2 * k, id=f"r{k}", tool={**result["tool"], "call_id": f"k{k}"}, text=text,
                      tokens=count_tokens(text))
        items += [call, result]
    return items


def test_a_current_turn_larger_than_the_budget_is_cut_never_emptied():
    items = _agentic_turn(pairs=40, words=60)            # one prompt, then 40 tool pairs in the same turn
    for budget in (300, 900, 2500):
        pack = _pack(items, budget)
        assert_valid(pack, items, budget)
        assert 1 in pack.event_seqs and {88, 89} <= set(pack.event_seqs)     # the prompt and the newest pair
    pack = _pack(items, 2500)
    assert pack.cleared and min(pack.cleared) < 89                         # old results went to placeholders first


def test_a_long_agentic_turn_in_history_goes_a_stretch_at_a_time_oldest_first():
    items = _agentic_turn(pairs=60, words=40)            # one prompt, 60 tool pairs, then the next prompt
    items.append({**items[0], "seq": 500, "id": "next", "turn_id": "s/t1", "text": "now write the summary"})
    pack = _pack(items, 3000)
    assert_valid(pack, items, 3000)
    assert pack.tokens > 0.8 * 3000                    # not the whole turn thrown out for one that did not fit
    assert len(pack.elision.ranges) <= 2 and 1 in pack.event_seqs   # one run went; the prompt outlived it
    kept_results = [s for s in pack.event_seqs if 11 <= s < 500 and s % 2]
    assert kept_results and min(kept_results) > 40      # what went is the oldest part


def test_openai_shape_has_every_call_answered_right_after_it():
    items = session(3)
    items.append({**items[1], "id": "x", "seq": 99, "turn_id": "s/t9",
                  "tool": {"name": "shell", "call_id": "pending", "input": {"cmd": "ls"}}})
    msgs = to_openai(_pack(items, 5000))
    answered = {m["tool_call_id"] for m in msgs if m["role"] == "tool"}
    asked = {c["id"] for m in msgs if m.get("tool_calls") for c in m["tool_calls"]}
    assert asked == answered and "pending" in asked
    assert next(m for m in msgs if m.get("tool_call_id") == "pending")["content"] == "aborted"


def test_anthropic_shape_alternates_roles_and_pairs_tool_use():
    body = to_anthropic(_pack([_fixed("system", "sys", 0), *session(4)], 5000))
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    assert uses == results and body["system"] == "sys"


def test_prompts_outlive_the_tool_output_of_their_age():
    items = session(12, tokens=150)
    pack = _pack(items, 900)
    assert_valid(pack, items, 900)
    shown = set(pack.event_seqs)
    gone = [e for e in items if e["seq"] not in shown]
    assert gone and any(e["kind"] == "tool_result" for e in gone)
    oldest_gone = min(e["seq"] for e in gone)
    assert all(e["seq"] in shown for e in items if e["kind"] == "user" and e["seq"] > oldest_gone + 8)


def test_smart_trim_keeps_what_the_latest_request_is_about():
    items = session(12, tokens=120)
    items[6] = {**items[6], "text": "the kafka broker rebalance log " * 10}          # turn 1's tool output
    items.append({**items[0], "seq": 200, "id": "ask", "turn_id": "s/t99", "text": "why did the kafka broker rebalance?"})
    query = "why did the kafka broker rebalance?"
    with_query = _pack(items, 900, query=query)
    without = _pack(items, 900)
    assert 7 in with_query.event_seqs and 7 not in without.event_seqs
    assert_valid(with_query, items, 900)


def test_only_the_latest_protected_state_is_pinned_older_ones_go_like_any_pair():
    items = session(10, tokens=200)
    for t in (1, 6):                                      # two TodoWrite states
        for i in (4 * t + 1, 4 * t + 2):
            items[i] = {**items[i], "tool": {**items[i]["tool"], "name": "TodoWrite"}}
    pack = _pack(items, 700)
    shown = set(pack.event_seqs)
    assert {26, 27} <= shown and not {6, 7} & shown
    assert_valid(pack, items, 700)


def test_old_thinking_is_cleared_with_a_pointer_except_the_last_two_responses():
    items = session(5)
    for t in range(5):
        items[4 * t + 3] = {**items[4 * t + 3], "text": f"<thinking>\nweighing option {t} carefully\n</thinking>\n\nanswer {t}"}
    pack = _pack(items, 5000)
    text = "\n".join(m.content for m in pack.messages)
    assert "weighing option 4" in text and "weighing option 3" in text
    assert "weighing option 2" not in text and "[thinking cleared" in text and "trace show 12]" in text
    assert "answer 2" in text


def test_tool_output_is_middle_truncated_to_the_configured_size():
    items = session(2)
    big = "\n".join(f"line {i} of the build log" for i in range(2000))
    items[2] = {**items[2], "text": big, "tokens": count_tokens(big)}
    pack = _pack(items, 20_000, tool_max_tokens=300)
    result = next(m for m in pack.messages if m.role == "tool")
    assert result.content.startswith("Total output lines: 2000") and "tokens truncated…" in result.content
    assert "line 0 of" in result.content and "line 1999 of" in result.content
    assert "trace show 3 --full" in result.content and count_tokens(result.content) <= 300


def test_notes_are_capped_newest_first_and_the_rest_are_named():
    notes = [_fixed("note", f"note {i}: " + "detail " * 300, 100 + i) for i in range(10)]
    items = [*session(2), *notes]
    pack = _pack(items, 20_000)
    block = next(m for m in pack.messages if m.part == "notes")
    assert block.content.index("note 9:") < block.content.index("note 8:")
    assert "note 0:" not in block.content and count_tokens(block.content) <= 2000 + 20
    assert 100 in _selected(pack.elision.ranges)


def test_recalled_blocks_in_logged_text_are_not_shown_again():
    items = session(2)
    items[4] = {**items[4], "text": '<recalled-context source="trace">\nold stuff\n</recalled-context>\nnext step?'}
    pack = _pack(items, 5000)
    text = "\n".join(m.content for m in pack.messages)
    assert "old stuff" not in text and "next step?" in text


def test_the_elision_ranges_skip_what_the_pack_shows():
    assert gaps(1, 20, [1, 5, 6, 10, 25]) == [(2, 4), (7, 9), (11, 20)]


kinds = st.sampled_from(["user", "assistant", "tool_pair", "tool_pair", "tool_pair", "system", "note",
                         "task_state", "marker", "orphan_call", "orphan_result", "thinking"])


@settings(max_examples=150, deadline=None)
@given(spec=st.lists(st.tuples(kinds, st.integers(min_value=1, max_value=1500)), min_size=1, max_size=40),
       budget=st.integers(min_value=50, max_value=6000), block=st.booleans(), same_turn=st.booleans())
def test_any_session_any_budget_the_pack_fits_or_names_a_minimum_that_does(spec, budget, block, same_turn):
    items, seq = [], 1
    for t, (kind, size) in enumerate(spec):
        text = " ".join(f"w{i % 97}" for i in range(size))
        base = {"session_id": "s", "turn_id": "s/t0" if same_turn else f"s/t{t}", "ts": None}
        if kind == "tool_pair":
            call = {"name": "shell", "call_id": f"c{t}"}
            items += [{**base, "id": f"e{seq}", "seq": seq, "kind": "tool_call", "text": "shell {}", "tokens": 3,
                       "tool": {**call, "input": {"cmd": text[:size // 2]}}},
                      {**base, "id": f"e{seq+1}", "seq": seq + 1, "kind": "tool_result", "text": text,
                       "tokens": count_tokens(text), "tool": {**call, "is_error": False}}]
            seq += 2
            continue
        if kind in ("orphan_call", "orphan_result"):
            items.append({**base, "id": f"e{seq}", "seq": seq, "kind": kind.split("_")[1].replace("call", "tool_call")
                          .replace("result", "tool_result"), "text": "shell {}", "tokens": 3,
                          "tool": {"name": "shell", "call_id": f"o{t}", "input": {}}})
        else:
            small = kind in ("system", "note", "task_state", "marker")
            body = text[:200] if small else text
            if kind == "thinking":
                kind, body = "assistant", f"<thinking>\n{body}\n</thinking>"
            items.append({**base, "id": f"e{seq}", "seq": seq, "kind": kind, "text": body,
                          "tokens": count_tokens(body)})
        seq += 1
    recalled = "<recalled-context>" + "r " * 100 + "</recalled-context>" if block else ""
    try:
        pack = _pack(items, budget, block=recalled)
    except BudgetTooSmall as err:
        assert err.needed > budget
        budget = err.needed
        pack = _pack(items, budget, block=recalled)
    assert_valid(pack, items, budget)
