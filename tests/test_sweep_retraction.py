"""A value taken back in the conversation that set it ("Set the retry count
to 9." … "Never mind, don't change the retry count.") is not the current
value: the sweep goes back to the value before it, or, with none before it,
removes the fact (a DELETE only with --allow-delete). A "don't change X"
said in another conversation keeps what is known."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reducers.fact_keys import FactCandidate
from reducers.fact_reconcile import Knowledge, Reconciler
from reducers.fact_rules import prose_facts


def _said(text: str, n: int, session: str = "s") -> FactCandidate:
    found, = prose_facts(text, "user")
    return replace(found, source={"id": f"e{n}", "seq": n, "session_id": session, "ts": f"2026-05-0{n}T09:00:00Z"})


@pytest.mark.parametrize("text", ["Never mind, don't change the retry count.",
                                  "Scratch that, leave the retry count as it was.",
                                  "Ignore what I said about the retry count.", "Forget the retry count change.",
                                  "Undo the retry count change."])
def test_a_retraction_names_the_key_it_takes_back(text):
    assert [(f.key, f.retract) for f in prose_facts(text, "user")] == [("retry count", True)]


@pytest.mark.parametrize("text", ["Don't change the retry count.", "Never mind.",
                                  "Scratch that, keep the retry count at 5."])
def test_keeping_a_value_or_a_bare_never_mind_retracts_nothing(text):
    assert not any(f.retract for f in prose_facts(text, "user"))


def test_a_retracted_value_goes_back_to_the_one_before_it():
    r = Reconciler(Knowledge())
    r.decide(_said("Set the retry count to 3.", 1, session="a"))
    r.decide(_said("Set the retry count to 9.", 2, session="b"))
    row, = r.decide(_said("Never mind, don't change the retry count.", 3, session="b"))
    assert (row["action"], row["key"], row["old"], row["new"], row["source_ids"], row["target_ids"]) == \
        ("SUPERSEDE", "retry count", "9", "3", ["e3"], ["e2"])
    assert [(f.key, f.value) for f in r.knowledge.live()] == [("retry count", "3")]


def test_a_retraction_in_another_conversation_keeps_the_known_value():
    r = Reconciler(Knowledge())
    r.decide(_said("Set the retry count to 3.", 1, session="a"))
    r.decide(_said("Set the retry count to 9.", 2, session="a"))
    row, = r.decide(_said("Ignore what I said about the retry count.", 3, session="c"))
    assert row["action"] == "NONE"
    assert [f.value for f in r.knowledge.live()] == ["9"]


@pytest.mark.parametrize("allow_delete, action, live", [(False, "NONE", ["9"]), (True, "DELETE", [])])
def test_a_retracted_first_value_is_removed_only_when_deletes_are_on(allow_delete, action, live):
    r = Reconciler(Knowledge(), allow_delete=allow_delete)
    r.decide(_said("Set the retry count to 9.", 1))
    row, = r.decide(_said("Forget the retry count change.", 2))
    assert row["action"] == action
    assert [f.value for f in r.knowledge.live()] == live
