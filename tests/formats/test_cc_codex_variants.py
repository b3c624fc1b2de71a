"""Record shapes of older and newer Claude Code and Codex CLI versions that
the parsers must read like the common ones: nothing dropped, nothing stored
twice, every call paired with its result."""
from __future__ import annotations

import pytest

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import claude_code, codex


def _parse(module, lines: list, source_id: str = "/logs/variant.jsonl"):
    items = list(module.parse(list(enumerate(lines, 1)), ParseContext(path=source_id, source_id=source_id)))
    return [d for d in items if isinstance(d, Draft)], [b for b in items if isinstance(b, BadRecord)]


# ---------------------------------------------------------------- Claude Code

def test_a_claude_code_line_written_again_verbatim_is_read_once():
    # Claude Code sometimes writes lines of a session again, unchanged (same
    # uuid, same content): with stream-json input, or several writers at once.
    sid = "7a0c3b52-0000-4000-8000-00000000aaaa"
    prompt = {"type": "user", "sessionId": sid, "uuid": "u-1", "parentUuid": None,
              "timestamp": "2026-02-01T09:00:00.000Z", "message": {"role": "user", "content": "count the files"}}
    call = {"type": "assistant", "sessionId": sid, "uuid": "u-2", "parentUuid": "u-1",
            "timestamp": "2026-02-01T09:00:01.000Z",
            "message": {"id": "msg_a", "role": "assistant",
                        "content": [{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {"command": "ls"}}]}}
    result = {"type": "user", "sessionId": sid, "uuid": "u-3", "parentUuid": "u-2",
              "timestamp": "2026-02-01T09:00:02.000Z",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9",
                                                       "content": "a\nb"}]}}
    once, _ = _parse(claude_code, [prompt, call, result])
    twice, bad = _parse(claude_code, [prompt, call, result, dict(prompt), dict(call), dict(result)])
    assert not bad
    assert [(d.kind, d.key) for d in twice] == [(d.kind, d.key) for d in once]
    assert [d.kind for d in twice] == ["user", "tool_call", "tool_result"]


def test_a_reused_claude_code_uuid_with_other_content_is_still_a_new_line():
    sid = "7a0c3b52-0000-4000-8000-00000000bbbb"
    first = {"type": "user", "sessionId": sid, "uuid": "shared", "timestamp": "2026-02-01T09:00:00.000Z",
             "message": {"role": "user", "content": "first words"}}
    second = {**first, "message": {"role": "user", "content": "other words"}}
    drafts, _ = _parse(claude_code, [first, second])
    assert [d.text for d in drafts] == ["first words", "other words"]
    assert len({d.key for d in drafts}) == 2



def _cc_line(sid: str, uuid: str, rtype: str = "user", parent: str | None = None, **fields) -> dict:
    return {"type": rtype, "sessionId": sid, "uuid": uuid, "parentUuid": parent,
            "timestamp": f"2026-02-01T09:00:{len(uuid):02d}.000Z", **fields}


@pytest.mark.parametrize("text, subtype", [
    ("Another Claude session sent a message:\n<teammate-message teammate_id=\"indexer\">done</teammate-message>",
     "teammate"),
    ("<teammate-message teammate_id=\"team-lead\">Review the parser</teammate-message>", "teammate"),
    ("<fork-boilerplate>You are a fork of the parent agent.</fork-boilerplate>", "fork"),
    ("<system-reminder>cwd changed to /tmp/other</system-reminder>\n", "system_reminder"),
])
def test_user_lines_the_harness_wrote_stay_user_lines_marked_injected(text, subtype):
    sid = "7a0c3b52-0000-4000-8000-00000000cccc"
    prompt = _cc_line(sid, "u-1", message={"role": "user", "content": "rebuild the index"})
    injected = _cc_line(sid, "u-22", parent="u-1", message={"role": "user", "content": text})
    drafts, _ = _parse(claude_code, [prompt, injected])
    assert [(d.kind, d.text) for d in drafts] == [("user", "rebuild the index"), ("user", text)]
    assert drafts[0].meta is None and drafts[1].meta == {"injected": subtype}


def test_a_reminder_inside_typed_text_is_not_marked():
    sid = "7a0c3b52-0000-4000-8000-00000000dddd"
    text = "Please review.\n<system-reminder>cwd changed</system-reminder>"
    drafts, _ = _parse(claude_code, [_cc_line(sid, "u-1", message={"role": "user", "content": text})])
    assert [(d.kind, d.text, d.meta) for d in drafts] == [("user", text, None)]


def test_queued_text_is_kept_as_a_system_event_and_empty_queue_operations_add_nothing():
    sid = "7a0c3b52-0000-4000-8000-00000000eeee"
    lines = [{"type": "queue-operation", "operation": "remove", "content": "actually, the parser first",
              "sessionId": sid, "timestamp": "2026-02-01T09:00:02.000Z"},
             {"type": "queue-operation", "operation": "dequeue", "sessionId": sid,
              "timestamp": "2026-02-01T09:00:03.000Z"}]
    drafts, bad = _parse(claude_code, lines)
    assert not bad
    assert [(d.kind, d.text, d.meta) for d in drafts] == [
        ("system", "actually, the parser first", {"subtype": "queue", "operation": "remove"})]


def test_an_id_less_result_pairs_with_the_id_less_call_of_the_line_it_answers():
    sid = "7a0c3b52-0000-4000-8000-00000000ffff"
    call = _cc_line(sid, "a-1", "assistant", message={"id": "msg_1", "role": "assistant", "content": [
        {"type": "tool_use", "name": "bash", "input": {"command": "grep -rn TODO"}}]})
    result = _cc_line(sid, "r-1", parent="a-1", isMeta=True, message={"role": "user", "content": [
        {"type": "tool_result", "content": "a.txt:1: TODO fix"}]})
    drafts, _ = _parse(claude_code, [call, result])
    assert [d.kind for d in drafts] == ["tool_call", "tool_result"]
    assert drafts[0].tool["call_id"] == drafts[1].tool["call_id"]
    assert drafts[1].tool["name"] == "bash"


def test_an_attachment_of_an_unlisted_kind_that_shows_the_model_text_is_kept():
    sid = "7a0c3b52-0000-4000-8000-000000001111"
    line = _cc_line(sid, "t-1", "attachment", attachment={"type": "model", "text": "You are Opus 5.5."})
    drafts, _ = _parse(claude_code, [line])
    assert [(d.kind, d.text, d.meta) for d in drafts] == [("system", "You are Opus 5.5.", {"attachment": "model"})]


# ---------------------------------------------------------------- Codex: the envelope-less layout

def _legacy_rollout() -> list:
    """A rollout as mid-2025 Codex versions wrote it: a header line, then bare
    response items, with state lines between them; no timestamps on items."""
    return [
        {"id": "11111111-2222-4333-8444-555555555555", "timestamp": "2025-07-10T08:00:00.000Z",
         "instructions": None, "git": {"branch": "main"}},
        {"record_type": "state"},
        {"type": "message", "id": None, "role": "user",
         "content": [{"type": "input_text", "text": "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "list the files "}]},
        {"record_type": "state"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Listing"}],
         "encrypted_content": "opaque"},
        {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
         "call_id": "call_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\n"},
        {"type": "local_shell_call", "id": "ls_1", "call_id": "call_2", "status": "completed",
         "action": {"type": "exec", "command": ["pwd"]}},
        {"type": "function_call_output", "call_id": "call_2", "output": "/w\n"},
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "One file."}]},
        {"record_type": "state"},
    ]


def test_an_envelope_less_codex_rollout_is_claimed_by_sniff():
    assert codex.sniff(_legacy_rollout())
    assert not codex.sniff([{"type": "message", "role": "user", "content": "hi"}])      # a bare message list
    assert not codex.sniff([{"id": "x", "timestamp": "2025-07-10T08:00:00Z"}])          # a header alone


def test_an_envelope_less_codex_rollout_yields_every_message_call_and_result():
    drafts, bad = _parse(codex, _legacy_rollout())
    assert not bad
    assert {d.session_id for d in drafts} == {"11111111-2222-4333-8444-555555555555"}
    assert [(d.kind, d.text) for d in drafts if d.kind in ("user", "assistant", "system")] == [
        ("system", "git: main"),                                  # the header's setting
        ("system", "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
        ("user", "list the files "),
        ("assistant", "<thinking>\nListing\n</thinking>"),
        ("assistant", "One file.")]
    calls = [d.tool["call_id"] for d in drafts if d.kind == "tool_call"]
    results = [d.tool["call_id"] for d in drafts if d.kind == "tool_result"]
    assert calls == results == ["call_1", "call_2"]


def test_an_envelope_less_codex_rollouts_items_take_the_latest_time_the_file_gave():
    lines = _legacy_rollout()
    lines[7] = {**lines[7], "timestamp": "2025-07-10T08:00:05.000Z"}      # one item that says when
    drafts, _ = _parse(codex, lines)
    assert [d.ts for d in drafts] == (["2025-07-10T08:00:00.000Z"] * 5 + ["2025-07-10T08:00:05.000Z"] * 4)
    # a borrowed time is no part of an item's identity: its key stays what it was
    later = _legacy_rollout()
    later[0] = {**later[0], "timestamp": "2025-07-11T09:00:00.000Z"}
    before, _ = _parse(codex, _legacy_rollout())
    after, _ = _parse(codex, later)
    assert [d.key for d in after][1:] == [d.key for d in before][1:]


def test_an_envelope_less_codex_rollout_parses_to_the_same_keys_twice():
    first, _ = _parse(codex, _legacy_rollout())
    again, _ = _parse(codex, _legacy_rollout())
    assert [d.key for d in first] == [d.key for d in again]
    assert len({d.key for d in first}) == len(first)


def test_stray_lines_in_an_enveloped_rollout_stay_bad_records():
    meta = {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": {"id": "s-9"}}
    _, bad = _parse(codex, [meta, {"silly": "this"}, {"type": "response_item"}])
    assert [b.line for b in bad] == [2, 3]


# ---------------------------------------------------------------- Codex: newer and older item names

def test_a_compaction_summary_item_is_a_compaction_marker():
    # `compaction_summary` is the older name of the `compaction` item (serde alias)
    lines = [{"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": {"id": "s-1"}},
             {"timestamp": "2026-01-01T00:00:01.000Z", "type": "response_item",
              "payload": {"type": "compaction_summary", "encrypted_content": "opaque"}}]
    drafts, _ = _parse(codex, lines)
    assert [(d.kind, d.text, d.meta) for d in drafts] == [("system", "[compacted]", {"subtype": "compacted"})]


@pytest.mark.parametrize("text, subtype", [
    ('<hook_prompt hook_run_id="run-1">Re-run the tests before stopping.</hook_prompt>', "hook_prompt"),
    ("<external_ticket>Customer reports a crash on save.</external_ticket>", "external_context"),
])
def test_hook_prompts_and_external_context_in_a_user_message_are_system_not_a_user_turn(text, subtype):
    lines = [{"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": {"id": "s-2"}},
             {"timestamp": "2026-01-01T00:00:01.000Z", "type": "response_item",
              "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}}]
    drafts, _ = _parse(codex, lines)
    assert [(d.kind, d.text, d.meta) for d in drafts] == [("system", text, {"subtype": subtype})]


def _rollout(sid: str, *payloads, meta: dict | None = None, start: str = "2026-03-01T10:00:00.000Z") -> list:
    head = {"timestamp": start, "type": "session_meta", "payload": {"id": sid, "timestamp": start, **(meta or {})}}
    return [head] + [{"timestamp": ts, "type": rtype, "payload": p} for ts, rtype, p in payloads]


def test_code_mode_output_parts_read_as_one_text_and_a_failed_script_is_an_error():
    lines = _rollout(
        "c-1",
        ("2026-03-01T10:00:01.000Z", "response_item", {"type": "custom_tool_call", "call_id": "call_1", "name": "exec",
                                                       "input": "await tools.exec_command({cmd: 'python x.py'})"}),
        ("2026-03-01T10:00:02.000Z", "response_item", {"type": "custom_tool_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Script failed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "input_text", "text": "zsh: command not found: python\n"}]}))
    drafts, _ = _parse(codex, lines)
    result = next(d for d in drafts if d.kind == "tool_result")
    assert result.text == "Script failed\nWall time 0.1 seconds\nOutput:\nzsh: command not found: python\n"
    assert result.tool["is_error"] is True and result.tool["call_id"] == "call_1"


def test_a_forked_sub_agent_names_its_parent_and_marks_the_history_it_copied():
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "p-1", "forked_from_id": "item-9",
                                           "spawn_call_id": "call-spawn"}}}
    lines = _rollout(
        "child-1",
        ("2026-03-01T09:59:00.000Z", "event_msg", {"type": "user_message", "message": "Spawn a researcher."}),
        ("2026-03-01T10:00:05.000Z", "event_msg", {"type": "user_message", "message": "Inspect the fixtures."}),
        meta={"source": spawn})
    drafts, _ = _parse(codex, lines)
    assert [(d.text, d.meta.get("inherited", False)) for d in drafts] == [
        ("Spawn a researcher.", True), ("Inspect the fixtures.", False)]
    assert {d.meta["parent_session"] for d in drafts} == {"p-1"}
    assert {d.session_id for d in drafts} == {"child-1"}


def test_sub_agent_spawns_and_errors_with_nested_details_are_system_events():
    lines = _rollout(
        "p-1",
        ("2026-03-01T10:00:01.000Z", "event_msg", {"type": "collab_agent_spawn_begin", "call_id": "call-s",
                                                   "new_thread_id": "child-1"}),
        ("2026-03-01T10:00:02.000Z", "event_msg", {"type": "collab_agent_spawn_end", "call_id": "call-s",
                                                   "new_thread_id": "child-1", "new_agent_nickname": "Ada",
                                                   "prompt": "Inspect the fixtures."}),
        ("2026-03-01T10:00:03.000Z", "event_msg", {"type": "error", "error": {"kind": "rate_limit",
                                                                             "message": "Rate limit exceeded"}}))
    drafts, bad = _parse(codex, lines)
    assert not bad
    assert [(d.kind, d.text) for d in drafts] == [
        ("system", "<collab_agent_spawn_end thread=child-1 new_agent_nickname=Ada>\nInspect the fixtures."),
        ("system", "Rate limit exceeded")]
    assert drafts[0].meta["thread"] == "child-1" and drafts[1].meta["error"] == "rate_limit"


def test_a_line_of_an_unknown_type_that_carries_a_message_is_read_as_that_message():
    sid = "7a0c3b52-0000-4000-8000-000000002222"
    line = _cc_line(sid, "m-1", "message", message={"id": "msg-1", "role": "user", "content": "list files"})
    drafts, bad = _parse(claude_code, [line])
    assert not bad
    assert [(d.kind, d.text) for d in drafts] == [("user", "list files")]


def test_a_line_of_an_unknown_type_without_a_message_is_kept_as_a_system_event_of_that_type():
    sid = "7a0c3b52-0000-4000-8000-000000002222"
    lines = [_cc_line(sid, "m-1", "user", message={"role": "user", "content": "list files"}),
             _cc_line(sid, "x-1", "continued-in", continuedInSessionId="next-session"),
             _cc_line(sid, "x-2", "future-bookkeeping")]          # nothing beyond the usual fields
    drafts, bad = _parse(claude_code, lines)
    assert not bad
    assert [(d.kind, d.text) for d in drafts] == [
        ("user", "list files"), ("system", '{"continuedInSessionId":"next-session"}')]
    assert drafts[1].meta["subtype"] == "continued-in" and drafts[1].session_id == sid


def test_an_assistant_messages_phase_commentary_or_final_answer_is_kept():
    lines = _rollout(
        "c-2",
        ("2026-03-01T10:00:01.000Z", "response_item", {"type": "message", "role": "assistant", "phase": "commentary",
                                                       "content": [{"type": "output_text", "text": "Looking."}]}),
        ("2026-03-01T10:00:02.000Z", "event_msg", {"type": "agent_message", "message": "Done.",
                                                   "phase": "final_answer"}))
    drafts, _ = _parse(codex, lines)
    assert [(d.text, d.meta.get("phase")) for d in drafts] == [("Looking.", "commentary"), ("Done.", "final_answer")]


def test_a_reused_call_id_with_another_input_is_another_call_and_a_repeat_is_not():
    sid = "7a0c3b52-0000-4000-8000-000000003333"

    def call(uuid, mid, command):
        return _cc_line(sid, uuid, "assistant", message={"id": mid, "role": "assistant", "content": [
            {"type": "tool_use", "id": "REDACTED", "name": "Bash", "input": {"command": command}}]})
    drafts, _ = _parse(claude_code, [call("a-1", "m1", "ls"), call("a-22", "m2", "ls | head"),
                                     call("a-333", "m3", "ls | head")])
    assert [d.text for d in drafts if d.kind == "tool_call"] == ['Bash {"command":"ls"}', 'Bash {"command":"ls | head"}']


def test_a_task_notification_is_marked_and_session_titles_are_system_events_kept_once():
    sid = "7a0c3b52-0000-4000-8000-000000004444"
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    lines = [_cc_line(sid, "u-1", message={"role": "user", "content": note}, origin={"kind": "task-notification"}),
             {"type": "ai-title", "aiTitle": "Rebuild the desktop app", "sessionId": sid},
             {"type": "ai-title", "aiTitle": "Rebuild the desktop app", "sessionId": sid},
             {"type": "custom-title", "customTitle": "desktop rebuild", "sessionId": sid}]
    drafts, bad = _parse(claude_code, lines)
    assert not bad
    assert [(d.kind, d.text, d.meta.get("injected") or d.meta.get("subtype")) for d in drafts] == [
        ("user", note, "task_notification"), ("system", "Rebuild the desktop app", "title"),
        ("system", "desktop rebuild", "title")]


def test_api_errors_being_retried_and_failed_hooks_keep_their_text():
    sid = "7a0c3b52-0000-4000-8000-000000005555"
    lines = [_cc_line(sid, "s-1", "system", subtype="api_error", retryAttempt=1, maxRetries=10,
                      error={"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"}}),
             _cc_line(sid, "s-22", "attachment", attachment={"type": "hook_non_blocking_error", "hookName": "lint",
                                                             "stderr": "eslint not found", "exitCode": 1})]
    drafts, bad = _parse(claude_code, lines)
    assert not bad
    assert [d.text for d in drafts] == ["API error 529: Overloaded (retry 1 of 10)", "eslint not found"]


def test_interrupts_and_command_output_in_user_lines_are_marked():
    sid = "7a0c3b52-0000-4000-8000-000000006666"
    texts = ["[Request interrupted by user for tool use]", "<local-command-stdout>Goodbye!</local-command-stdout>",
             "<bash-stdout>a.txt</bash-stdout><bash-stderr></bash-stderr>"]
    lines = [_cc_line(sid, f"u-{'x' * (i + 1)}", message={"role": "user", "content": t}) for i, t in enumerate(texts)]
    drafts, _ = _parse(claude_code, lines)
    assert [(d.kind, d.text, d.meta["injected"]) for d in drafts] == [
        ("user", texts[0], "interrupted"), ("user", texts[1], "local_command"), ("user", texts[2], "bash_output")]


def test_agent_progress_relays_a_sub_agents_messages_as_sidechain_lines_keyed_as_its_own_file():
    sid = "7a0c3b52-0000-4000-8000-000000007777"
    inner = {"type": "assistant", "uuid": "sub-u-1", "timestamp": "2026-03-11T23:19:46.000Z",
             "message": {"id": "msg_sub", "role": "assistant", "content": [
                 {"type": "tool_use", "id": "toolu_sub", "name": "Read", "input": {"file_path": "/a.go"}}]}}
    progress = {"type": "progress", "sessionId": sid, "uuid": "p-1", "parentUuid": "a-0",
                "timestamp": "2026-03-11T23:19:46.100Z", "toolUseID": "agent_msg_1", "parentToolUseID": "toolu_task",
                "data": {"type": "agent_progress", "agentId": "addf", "prompt": "Fetch the source", "message": inner}}
    hook = {"type": "progress", "sessionId": sid, "uuid": "p-2", "data": {"type": "hook_progress", "hookName": "x"}}
    relayed, bad = _parse(claude_code, [progress, hook])
    own_file = {**inner, "sessionId": sid, "isSidechain": True, "agentId": "addf"}
    direct, _ = _parse(claude_code, [own_file], source_id="/logs/subagents/agent-addf.jsonl")
    assert not bad
    assert [(d.kind, d.tool["call_id"], d.meta) for d in relayed] == [
        ("tool_call", "toolu_sub", {"sidechain": True, "agent_id": "addf"})]
    assert [d.key for d in relayed] == [d.key for d in direct]        # read twice, stored once


def test_trimmed_claude_code_lines_without_session_or_uuid_are_still_claude_code():
    # test fixtures keep only what a reader needs: type, message, time, cwd
    from reducers.formats.registry import detect_format
    lines = [{"type": "user", "timestamp": "2024-01-01T10:00:00Z", "message": {"content": "Fix the login bug"},
              "cwd": "/Users/alice/code/app"},
             {"type": "assistant", "timestamp": "2024-01-01T10:00:05Z",
              "message": {"content": [{"type": "text", "text": "Looking at auth."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                       "input": {"file_path": "src/auth.ts"}}]}}]
    assert detect_format(lines) == "claude-code"
    drafts, bad = _parse(claude_code, lines)
    assert not bad
    assert [(d.kind, d.text) for d in drafts][:2] == [("user", "Fix the login bug"), ("assistant", "Looking at auth.")]
    assert drafts[-1].tool == {"name": "Read", "call_id": "toolu_1", "input": {"file_path": "src/auth.ts"}}


def test_an_exporting_tools_own_header_line_is_kept_as_a_system_event_not_an_error():
    sid = "54f2c312-0000-4000-8000-00000000cccc"
    header = {"_type": "hive-mind-meta", "version": "0.1", "sessionId": "agent-a0004c2",
              "rawPath": "/Users/y/.claude/projects/p/agent-a0004c2.jsonl"}
    drafts, bad = _parse(claude_code, [header, _cc_line(sid, "u-1", message={"role": "user", "content": "Warmup"})])
    assert not bad
    assert [d.kind for d in drafts] == ["system", "user"]
    assert drafts[0].meta == {"subtype": "wrapper", "wrapper": "hive-mind-meta"}
    assert '"rawPath":"/Users/y/.claude/projects/p/agent-a0004c2.jsonl"' in drafts[0].text
    assert drafts[0].session_id == drafts[1].session_id == sid        # the file's own session, not the wrapper's


def test_lines_of_an_unknown_type_that_carry_a_sessions_messages_are_claude_code():
    from reducers.formats.registry import detect_format
    sid = "claude-session-1"
    lines = [{"uuid": "m1", "sessionId": sid, "timestamp": "2025-11-26T12:51:28.093Z", "type": "message",
              "message": {"id": "m1", "role": "user", "content": "list files"}},
             {"uuid": "m2", "sessionId": sid, "timestamp": "2025-11-26T12:51:29.100Z", "type": "message",
              "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Empty."}]}}]
    assert detect_format(lines) == "claude-code"
    drafts, bad = _parse(claude_code, lines)
    assert not bad and [(d.kind, d.text) for d in drafts] == [("user", "list files"), ("assistant", "Empty.")]


def test_reasoning_given_as_a_plain_string_or_a_top_level_text_is_kept():
    t = "2026-03-01T10:00:01.000Z"
    drafts, bad = _parse(codex, _rollout(
        "c-3",
        (t, "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Planning"}],
                              "content": "I'll write hello.py.", "encrypted_content": None}),
        (t, "response_item", {"type": "reasoning", "summary": [], "content": "Testing edge cases"}),
        (t, "response_item", {"type": "reasoning", "text": "Scan the README first"})))
    assert not bad
    assert [d.text for d in drafts if d.kind == "assistant"] == [
        "<thinking>\nPlanning\n\nI'll write hello.py.\n</thinking>", "<thinking>\nTesting edge cases\n</thinking>",
        "<thinking>\nScan the README first\n</thinking>"]


def test_a_call_and_its_output_written_without_a_type_are_still_a_paired_call():
    t = "2026-03-01T10:00:01.000Z"
    drafts, bad = _parse(codex, _rollout(
        "c-4",
        (t, "response_item", {"name": "shell", "call_id": "call_001", "arguments": "{\"command\":\"cat README.md\"}"}),
        (t, "response_item", {"call_id": "call_001", "status": "completed", "output": "# Test Project"})))
    assert not bad
    assert [(d.kind, d.text, d.tool["call_id"], d.tool["name"]) for d in drafts if d.tool] == [
        ("tool_call", 'shell {"command":"cat README.md"}', "call_001", "shell"),
        ("tool_result", "# Test Project", "call_001", "shell")]


def test_a_codex_line_of_a_type_newer_than_the_parser_is_kept_as_a_system_event():
    sid = "019a0000-0000-7000-8000-00000000cafe"
    lines = [{"timestamp": "2026-03-01T09:00:00.000Z", "type": "session_meta", "payload": {"id": sid}},
             {"timestamp": "2026-03-01T09:00:01.000Z", "type": "retained_context",
              "payload": {"type": "verified_answer", "questions": [{"question": "Colour?", "answer": "Green"}]}},
             {"timestamp": "2026-03-01T09:00:02.000Z", "type": "world_state", "payload": {"cwd": "/w"}}]
    drafts, bad = _parse(codex, lines)
    assert not bad
    assert [(d.kind, d.meta["subtype"]) for d in drafts] == [("system", "retained_context")]
    assert '"answer":"Green"' in drafts[0].text


def test_codex_content_blocks_of_other_shapes_keep_their_text():
    sid = "019a0000-0000-7000-8000-00000000beef"
    blocks = [{"type": "output_text", "text": "First."}, {"type": "output_text", "output_text": "Second."},
              {"type": "summary_text", "text": "Third."},
              {"type": "refusal", "refusal": "I can't help with that."}, {"type": "code", "code": "print(1)"},
              {"type": "chart", "series": [1, 2]}]
    lines = [{"timestamp": "2026-03-01T09:00:00.000Z", "type": "session_meta", "payload": {"id": sid}},
             {"timestamp": "2026-03-01T09:00:01.000Z", "type": "response_item",
              "payload": {"type": "message", "role": "assistant", "content": blocks}}]
    drafts, bad = _parse(codex, lines)
    assert not bad
    assert [d.text for d in drafts] == ['First.\nSecond.\nThird.\nI can\'t help with that.\nprint(1)\n'
                                        '{"type":"chart","series":[1,2]}']
