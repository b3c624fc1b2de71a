"""A pointer's directive is one an agent can run as written: `recall(...)`
only with words to recall by, and `trace show` always."""
from __future__ import annotations

import re

import pytest

from reducers.markers import build_marker, elision_text, marker_text
from reducers.render import BudgetTooSmall, RenderPolicy, SessionView, assemble
from reducers.tokens import count_tokens
from tests.test_evict import session


def _recall_queries(text: str) -> list[str]:
    return re.findall(r'recall\("([^"]*)"\)', text)


def test_a_marker_over_a_span_with_no_topic_words_points_only_to_trace_show():
    text = marker_text(3, 9, "2026-05-01T10:00:00Z", "2026-05-01T10:05:00Z", 7, [], "s")
    assert _recall_queries(text) == [] and "recall" not in text
    assert text.endswith("Use trace show 3..9.]") and "(2026-05-01 10:00–10:05)" in text


def test_a_marker_with_topics_recalls_by_them():
    text = marker_text(3, 9, None, None, 7, ["docker", "ssl", "certs", "nginx"], "s")
    assert _recall_queries(text) == ["docker ssl certs"] and "trace show 3..9" in text


def test_a_compaction_of_emoji_and_numbers_leaves_no_empty_recall():
    evicted = [{"seq": s, "ts": "2026-05-01T10:00:00Z", "text": "🚀 4711 🔥"} for s in (4, 5, 6)]
    marker = build_marker("s", evicted, topics=[], cycle=1, strategy="pointer")
    assert "recall(" not in marker["text"] and "trace show 4..6" in marker["text"]


def test_an_elision_with_no_topics_points_only_to_trace_show():
    assert elision_text([(1, 4), (6, 6)], [], "s") == "[Not in this pack: events 1–6 of this session. " \
                                                      "Use trace show 1..4,6 --session s.]"
    assert _recall_queries(elision_text([(1, 4)], ["kube", "pods"], "s")) == ["kube pods"]


def test_the_smallest_pack_s_pointer_never_says_recall_of_nothing():
    items = session(30)
    items[-4] = {**items[-4], "text": "word " * 3000, "tokens": count_tokens("word " * 3000)}     # a huge prompt
    policy = RenderPolicy(topics=lambda texts: ["output", "answer"] if texts else [])
    with pytest.raises(BudgetTooSmall) as err:
        assemble(SessionView.of_items("s", items), 50, "", policy)
    for budget in (err.value.needed, err.value.needed + 40):
        pack = assemble(SessionView.of_items("s", items), budget, "", policy)
        assert pack.tokens <= budget and pack.elision
        assert all(q.strip("… ") for q in _recall_queries(pack.elision.text)), pack.elision.text
    roomy = assemble(SessionView.of_items("s", items), err.value.needed + 40, "", policy)
    assert _recall_queries(roomy.elision.text) == ["output answer"]      # topics come back once they fit


def test_a_marker_counts_its_events_in_plain_english():
    assert "evicted: 1 event." in marker_text(172, 172, None, None, 1, ["retry"], "s")
    assert "evicted: 2 events." in marker_text(172, 173, None, None, 2, ["retry"], "s")


def test_the_smallest_pack_names_a_big_protected_state_apart_from_the_current_turn():
    """The latest TodoWrite is pinned and never cut; when it is what makes
    the minimum big, the error says so instead of blaming the current turn."""
    from tests.test_render import _agentic_turn
    items = _agentic_turn(pairs=3, words=5)
    todo = "- [ ] " + "migrate the billing tables " * 300
    items[1] = {**items[1], "tool": {**items[1]["tool"], "name": "TodoWrite"}}
    items[2] = {**items[2], "text": todo, "tokens": count_tokens(todo)}
    with pytest.raises(BudgetTooSmall) as err:
        assemble(SessionView.of_items("s", items), 100, "", RenderPolicy())
    named = dict(part.rsplit(" ", 1) for part in str(err.value).split("(", 1)[1].split(")", 1)[0].split(", "))
    assert int(named["protected tools' latest state"]) >= count_tokens(todo)
    assert int(named["current turn"]) < count_tokens(todo) // 4
