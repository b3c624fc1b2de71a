"""Redaction of whole drafts (reducers/redact_fields.py): every field, in
batches whose one trigger scan picks the drafts to search."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reducers.drafts import Draft
from reducers.redact_fields import redact_drafts, redact_identities, redact_value
from tests.secret_samples import SHAPE_SAMPLES

SECRETS = [t for _, t, _ in SHAPE_SAMPLES]
GHP = "ghp_" + "Q7x" * 12
words = st.one_of(st.sampled_from(SECRETS[::4] + ["token", "sk-", "://", "password=", "\\n", " ", "tokens", "task"]),
                  st.text(max_size=12))
texts = st.lists(words, max_size=6).map("".join)
metas = st.one_of(st.none(), st.dictionaries(st.sampled_from(["hook", "password", "env", "note"]),
                                             st.one_of(texts, st.lists(texts, max_size=2)), max_size=3))


def _draft(i: int, text: str, meta, tool_input) -> Draft:
    return Draft(kind="tool_call", text=text, session_id="s", key=f"k/{i}", meta=meta,
                 tool={"name": "bash", "call_id": f"c{i}", "input": tool_input})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(texts, metas, st.one_of(texts, metas)), min_size=1, max_size=8))
def test_a_batch_is_redacted_exactly_as_each_draft_alone(items):
    drafts = [_draft(i, *item) for i, item in enumerate(items)]
    batch, n = redact_drafts(drafts)
    alone = [redact_drafts([d]) for d in drafts]
    assert batch == [d for (d,), _ in alone] and n == sum(k for _, k in alone)


def test_every_field_of_a_draft_is_redacted_and_counted():
    d = Draft(kind="system", text="hook ran", session_id="s", key="k", ts="2026-01-01T00:00:00.000Z",
              meta={"fields": {"hookInfos": [{"output": f"pushed with {GHP}"}]}, "env": {"DB_PASSWORD": "correcthorse"}},
              tool={"name": "x", "input": {"headers": {"Authorization": f"Bearer {GHP}"}}},
              source={"format": "openai", "path": f"exports/{GHP}.json"})
    (out,), n = redact_drafts([d])
    assert GHP not in repr(out) and "correcthorse" not in repr(out)
    assert n == 4 and out.meta["redacted"] == 4 and out.text == "hook ran"


def test_a_value_json_cannot_write_is_searched_string_by_string():
    lone = "\ud800"                                   # a lone surrogate: orjson refuses it
    d = Draft(kind="user", text="hi", session_id="s", key="k", meta={"note": f"{lone} key {GHP}", "big": 2 ** 70})
    (out,), n = redact_drafts([d])
    assert n == 1 and GHP not in out.meta["note"] and out.meta["big"] == 2 ** 70


def test_keys_redacted_alike_keep_both_values():
    value = {GHP: 1, "ghp_" + "Z9y" * 12: 2, "plain": 3}
    out, n = redact_value(value)
    assert n == 2 and sorted(out.values()) == [1, 2, 3] and not any(k.startswith("ghp_") for k in out)


def test_names_are_redacted_before_dedupe_and_an_event_id_holding_a_secret_is_dropped():
    d = Draft(kind="user", text="hi", session_id=f"sess-{GHP}", key=f"trace/{GHP}/0", event_id=GHP,
              merged_keys=[f"trace/{GHP}/1"])
    plain = Draft(kind="user", text="hi", session_id="s", key="k")
    out, same = redact_identities([d, plain])
    assert same is plain
    assert GHP not in repr(out) and out.event_id is None
    assert out.key == "trace/[REDACTED:github_token]/0" and out.merged_keys == ["trace/[REDACTED:github_token]/1"]
    assert redact_identities([out])[0] is out           # redacting again changes nothing: re-ingest finds the key
