"""merge_adjacent: the blocks of one streamed message become one event."""
from __future__ import annotations

from reducers.drafts import Draft, merge_adjacent


def _d(key, text, group="m1", kind="assistant", tool=None):
    return Draft(kind=kind, text=text, session_id="s", key=key, merge_group=group, tool=tool)


def test_adjacent_blocks_of_one_message_merge_and_keep_every_key():
    drafts = [_d("a", "<thinking>\nplan\n</thinking>"), _d("b", "I'll read it."),
              _d("c", "Read {}", kind="tool_call", tool={"name": "Read", "call_id": "t1"}, group=None),
              _d("d", "Done.")]
    merged = merge_adjacent(drafts)
    assert [m.kind for m in merged] == ["assistant", "tool_call", "assistant"]
    assert merged[0].text == "<thinking>\nplan\n</thinking>\n\nI'll read it."
    assert merged[0].all_keys() == ["a", "b"]


def test_the_input_drafts_are_never_modified():
    drafts = [_d("a", "one"), _d("b", "two")]
    merge_adjacent(drafts)
    assert [(d.text, d.merged_keys) for d in drafts] == [("one", []), ("two", [])]


def test_different_messages_do_not_merge():
    assert len(merge_adjacent([_d("a", "x", "m1"), _d("b", "y", "m2"), _d("c", "z", None)])) == 3


def test_a_thinking_block_merged_with_text_no_longer_claims_to_be_thinking():
    thinking = Draft(kind="assistant", text="<thinking>\nx\n</thinking>", session_id="s", key="a",
                     merge_group="m", meta={"thinking": True, "model": "m1"})
    merged = merge_adjacent([thinking, _d("b", "visible", "m")])
    assert merged[0].meta == {"model": "m1"}
