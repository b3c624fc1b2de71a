"""Hot-path reconciliation: ADD or NONE only, whole turns, pairs together."""
from __future__ import annotations

from reducers.drafts import Draft
from reducers.reconcile import ADD, NONE, AddAll, SizeAware, WorkingSet, output_digest


def d(kind, text, call=None, tool="Bash", **kw):
    t = {"name": tool, "call_id": call} if call else None
    return Draft(kind=kind, text=text, session_id="s", key=f"k-{kind}-{text}-{call}", turn_id="s/t1", tool=t, **kw)


def test_default_adds_everything_even_noise():
    turn = [d("system", "", meta={"attachment": "x"}), d("tool_call", "Bash {}", "c1")]
    assert AddAll().decide_turn(turn, WorkingSet(tokens=10**9)) == [ADD, ADD]


def test_size_aware_adds_everything_under_budget():
    turn = [d("system", "  "), d("assistant", "")]
    assert SizeAware(1000).decide_turn(turn, WorkingSet(tokens=999)) == [ADD, ADD]


def test_over_budget_blank_and_harness_noise_are_dropped_but_user_text_never():
    turn = [d("user", "please build it"), d("assistant", "   "), d("system", "reminder", meta={"attachment": "todo"}),
            d("user", "")]
    assert SizeAware(10).decide_turn(turn, WorkingSet(tokens=11)) == [ADD, NONE, NONE, ADD]


def test_over_budget_a_repeated_tool_output_goes_with_its_call():
    seen = WorkingSet(tokens=100, recent_outputs={output_digest("file1\nfile2\n")})
    turn = [d("tool_call", "Bash ls", "c1"), d("tool_result", "file1\nfile2\n", "c1")]
    assert SizeAware(10).decide_turn(turn, seen) == [NONE, NONE]


def test_a_new_output_keeps_its_call():
    seen = WorkingSet(tokens=100, recent_outputs={output_digest("old")})
    turn = [d("tool_call", "Bash ls", "c1"), d("tool_result", "new output", "c1")]
    assert SizeAware(10).decide_turn(turn, seen) == [ADD, ADD]


def test_a_call_whose_result_is_not_in_the_turn_is_kept():
    turn = [d("tool_call", "Bash ls", "c9")]
    assert SizeAware(10).decide_turn(turn, WorkingSet(tokens=100)) == [ADD]


def test_protected_tools_and_errors_are_never_dropped():
    seen = WorkingSet(tokens=100, recent_outputs={output_digest("same")})
    todo = [d("tool_call", "TodoWrite", "c1", tool="TodoWrite"), d("tool_result", "same", "c1", tool="TodoWrite")]
    err = [Draft(kind="tool_call", text="Bash x", session_id="s", key="a", tool={"name": "Bash", "call_id": "c2"}),
           Draft(kind="tool_result", text="same", session_id="s", key="b",
                 tool={"name": "Bash", "call_id": "c2", "is_error": True})]
    assert SizeAware(10).decide_turn(todo, seen) == [ADD, ADD]
    assert SizeAware(10).decide_turn(err, seen) == [ADD, ADD]


def test_only_add_or_none_ever_comes_back():
    turn = [d(k, t) for k, t in [("user", "x"), ("assistant", ""), ("system", ""), ("note", "")]]
    assert set(SizeAware(0).decide_turn(turn, WorkingSet(tokens=1))) <= {ADD, NONE}
