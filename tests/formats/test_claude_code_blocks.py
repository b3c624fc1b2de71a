"""What a Claude Code line holds besides plain text, tool calls and thinking
is kept too: an image the model returned, a block type newer than the
parser, a model fallback, thinking the log does not show, the sub-agent
that compacts a session."""
from __future__ import annotations

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import claude_code

SID = "5e1d0c7a-0000-4000-8000-00000000c0de"
PNG = "iVBORw0KGgo="


def _parse(lines: list[dict]):
    items = list(claude_code.parse(list(enumerate(lines, 1)), ParseContext(path="/p/s.jsonl", source_id="/p/s.jsonl")))
    assert not [b for b in items if isinstance(b, BadRecord)]
    return [d for d in items if isinstance(d, Draft)]


def _line(uuid: str, rtype: str, **fields) -> dict:
    return {"type": rtype, "sessionId": SID, "uuid": uuid, "timestamp": "2026-03-01T10:00:00.000Z", **fields}


def _assistant(uuid: str, *blocks: dict) -> dict:
    return _line(uuid, "assistant", message={"id": f"msg-{uuid}", "role": "assistant", "model": "claude-opus-4-8",
                                             "content": list(blocks)})


def test_an_image_the_model_returned_is_an_assistant_event_with_the_image_kept():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    (draft,) = _parse([_assistant("a-1", image)])
    assert (draft.kind, draft.text) == ("assistant", "[image]")
    assert draft.media == [image]


def test_a_block_of_a_type_the_parser_does_not_know_is_kept_as_written():
    (draft,) = _parse([_assistant("a-1", {"type": "illumination", "pigment": "lapis lazuli", "folio": 9})])
    assert draft.kind == "assistant"
    assert draft.text == '{"type":"illumination","pigment":"lapis lazuli","folio":9}'


def test_an_empty_text_block_still_gives_nothing():
    assert _parse([_assistant("a-1", {"type": "text", "text": ""})]) == []


def test_a_model_fallback_is_a_system_event_naming_both_models():
    block = {"type": "fallback", "from": {"model": "claude-fable-5"}, "to": {"model": "claude-opus-4-8"}}
    (draft,) = _parse([_assistant("a-1", block)])
    assert (draft.kind, draft.text) == ("system", "[model fallback: claude-fable-5 -> claude-opus-4-8]")
    assert draft.meta["subtype"] == "model_fallback"


def test_thinking_the_log_does_not_show_leaves_a_mark_like_redacted_thinking():
    drafts = _parse([_assistant("a-1", {"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgCKkB"},
                                {"type": "text", "text": "Done."})])
    assert [d.text for d in drafts] == ["<thinking>[not shown]</thinking>", "Done."]
    assert drafts[0].meta["thinking"] is True


def test_thinking_that_is_empty_and_unsigned_gives_nothing():
    assert _parse([_assistant("a-1", {"type": "thinking", "thinking": ""})]) == []


def test_the_compaction_sub_agents_request_is_claude_codes_words_not_the_users():
    side = {"isSidechain": True, "agentId": "acompact-e1f845"}
    drafts = _parse([
        _line("c-1", "user", **side, message={"role": "user", "content":
                                              "Your task is to create a detailed summary of the conversation so far"}),
        _line("c-2", "assistant", **side, message={"id": "msg-c", "role": "assistant",
                                                   "content": [{"type": "text", "text": "<summary>1. Primary request"}]}),
    ])
    assert [(d.kind, (d.meta or {}).get("subtype")) for d in drafts] == [("system", "compact_prompt"),
                                                                         ("assistant", None)]
    assert all(d.meta["sidechain"] and d.meta["agent_id"] == "acompact-e1f845" for d in drafts)


def test_another_sub_agents_prompt_stays_a_user_line():
    (draft,) = _parse([_line("s-1", "user", isSidechain=True, agentId="a7f3c2",
                             message={"role": "user", "content": "Find the failing test"})])
    assert draft.kind == "user"


def test_an_agents_name_is_kept_once_like_a_title():
    drafts = _parse([_line("n-1", "agent-name", agentName="background job"),
                     _line("n-2", "agent-name", agentName="background job")])
    assert [(d.kind, d.text, d.meta["subtype"], d.meta["by"]) for d in drafts] == [
        ("system", "background job", "title", "agent")]


def test_a_tool_reference_named_by_name_or_tool_name_shows_the_name():
    content = [{"type": "tool_reference", "name": "Scriptorium"}, {"type": "tool_reference", "tool_name": "Bash"}]
    (draft,) = _parse([_line("u-1", "user", message={"role": "user", "content": content})])
    assert draft.text == "[tool_reference: Scriptorium]\n\n[tool_reference: Bash]"


def test_a_summary_line_that_says_text_instead_of_summary_is_kept():
    (draft,) = _parse([_line("u-1", "user", message={"role": "user", "content": "Refactor main.rs"}),
                       {"type": "summary", "sessionId": SID, "text": "Helped refactor Rust code"}])[1:]
    assert (draft.kind, draft.text, draft.meta["subtype"]) == ("system", "Helped refactor Rust code", "summary")


def test_an_old_schema_tool_result_line_that_holds_its_result_as_a_block_is_paired_by_the_blocks_id():
    call = {"type": "tool_use", "sessionId": SID, "uuid": "t-1", "id": "tool-001", "name": "Task", "input": {"n": 1}}
    result = _line("t-2", "tool_result", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tool-001", "content": "Agent spawned successfully"}]})
    drafts = _parse([call, result])
    assert [(d.kind, d.tool["call_id"], d.tool["name"]) for d in drafts] == [("tool_call", "tool-001", "Task"),
                                                                            ("tool_result", "tool-001", "Task")]
    assert drafts[1].text == "Agent spawned successfully"


def test_what_a_failed_async_hook_printed_is_kept_and_a_quiet_success_adds_nothing():
    failed = {"type": "async_hook_response", "hookName": "PostToolUse:Bash", "stdout": "", "stderr": "lint: 3 errors",
              "exitCode": 1}
    quiet = {"type": "async_hook_response", "hookName": "PostToolUse:Bash", "stdout": "ok", "exitCode": 0}
    drafts = _parse([_line("h-1", "attachment", attachment=failed), _line("h-2", "attachment", attachment=quiet)])
    assert [(d.kind, d.text, d.meta["attachment"]) for d in drafts] == [
        ("system", "lint: 3 errors", "async_hook_response")]


def test_a_system_line_keeps_its_hook_errors_beside_its_content_and_its_other_fields():
    drafts = _parse([
        _line("s-1", "system", subtype="stop_hook_summary", content="hook ran", level="info",
              hookErrors=["boom"], hookCount=2),
        _line("s-2", "system", subtype="model_refusal_fallback", content="refused", level="error",
              originalModel="claude-opus-4-8", fallbackModel="claude-sonnet-4")])
    assert [d.text for d in drafts] == ["hook ran\nboom", "refused"]
    assert drafts[0].meta["fields"] == {"hookErrors": ["boom"], "hookCount": 2}
    assert drafts[1].meta["fields"] == {"originalModel": "claude-opus-4-8", "fallbackModel": "claude-sonnet-4"}


def test_a_tool_call_made_from_inside_a_code_run_names_its_caller_and_a_direct_one_does_not():
    run = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    drafts = _parse([_assistant("a-1", {"type": "tool_use", "id": "toolu_1", "name": "rollDie", "input": {},
                                        "caller": run},
                                {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {},
                                 "caller": {"type": "direct"}})])
    assert [(d.meta or {}).get("caller") for d in drafts] == [run, None]
