"""Record shapes from transcript versions the shared samples do not hold
(found in the formats' own documentation and in other projects' fixtures,
rewritten here by hand): each must be read into the right events, or
reported, never dropped without a word."""
from __future__ import annotations

import json

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, claude_code, codex, openai
from reducers.formats.registry import detect_format
from tests.helpers import cli


def parse_all(module, *records):
    ctx = ParseContext(path="/data/t.jsonl", source_id="/data/t.jsonl")
    return list(module.parse(list(enumerate(records, 1)), ctx))


def drafts_of(module, *records):
    out = parse_all(module, *records)
    assert not [b for b in out if isinstance(b, BadRecord)]
    return [d for d in out if isinstance(d, Draft)]


# ---------------------------------------------------------------- anthropic

def test_a_document_with_citations_enabled_stays_apart_from_the_question_after_it():
    # The Messages API's citations guide: a document block whose `citations`
    # is a setting ({"enabled": true}), then the user's question. Nothing is
    # cited yet, so the blocks are not pieces of one cut reply.
    body = {"model": "claude", "messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "The grass is green."},
         "title": "Facts", "citations": {"enabled": True}},
        {"type": "text", "text": "What color is the grass?"}]}]}
    [question] = drafts_of(anthropic, body)
    assert question.text == "[document: Facts]\nThe grass is green.\n\nWhat color is the grass?"


# ---------------------------------------------------------------- claude-code

CC_SESSION = "11111111-2222-4333-8444-555555555555"


def cc_line(rtype, uuid, parent, **fields):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": CC_SESSION,
            "version": "1.0.51", "type": rtype, "uuid": uuid, "timestamp": "2025-07-01T10:00:00Z", **fields}


def test_an_assistant_line_whose_message_has_no_content_is_reported_not_dropped():
    lines = [cc_line("user", "u1", None, message={"role": "user", "content": "hello"}),
             cc_line("assistant", "a1", "u1", message={"id": "msg_1", "role": "assistant", "model": "claude"}),
             cc_line("assistant", "a2", "a1", message="Hi"),
             cc_line("assistant", "a3", "a2", message={"id": "msg_2", "role": "assistant", "content": []})]
    out = parse_all(claude_code, *lines)
    assert [(b.line, b.reason) for b in out if isinstance(b, BadRecord)] == [
        (2, "assistant line without a readable message.content"),
        (3, "assistant line without a readable message.content")]
    # an empty block list says nothing and is no error
    assert [d.text for d in out if isinstance(d, Draft)] == ["hello"]


# ---------------------------------------------------------------- claude-code: the Agent SDK's message stream

SDK_SESSION = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1b"


def sdk(rtype, uuid, content=None, *, parent=None, mid=None, **fields):
    """A line as `claude -p --output-format stream-json --verbose` prints it."""
    line = {"type": rtype, "session_id": SDK_SESSION, "uuid": uuid, **fields}
    if content is not None:
        message = {"role": rtype, "content": content}
        if rtype == "assistant":
            message.update(id=mid, type="message", model="claude-sonnet-4-5", usage={"input_tokens": 5})
        line.update(message=message, parent_tool_use_id=parent)
    return line


SDK_RUN = [
    sdk("system", "i0", subtype="init", cwd="/p", model="claude-sonnet-4-5", tools=["Task", "Glob"]),
    sdk("stream_event", "e1", event={"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Dele"}},
        parent_tool_use_id=None),
    sdk("assistant", "a1", [{"type": "tool_use", "id": "toolu_task", "name": "Task", "input": {"prompt": "Find config"}}],
        mid="msg_1"),
    sdk("user", "s1", [{"type": "text", "text": "Find config"}], parent="toolu_task"),
    sdk("assistant", "s2", [{"type": "tool_use", "id": "toolu_g", "name": "Glob", "input": {"pattern": "*.toml"}}],
        parent="toolu_task", mid="msg_2"),
    sdk("user", "s3", [{"type": "tool_result", "tool_use_id": "toolu_g", "content": "pyproject.toml"}], parent="toolu_task"),
    sdk("user", "u2", [{"type": "tool_result", "tool_use_id": "toolu_task", "content": [{"type": "text", "text": "found"}]}]),
    sdk("assistant", "a2", [{"type": "text", "text": "Your config is pyproject.toml."}], mid="msg_3"),
    sdk("system", "c1", subtype="compact_boundary", compact_metadata={"trigger": "manual", "pre_tokens": 5000}),
    sdk("result", "r1", subtype="error_max_turns", is_error=True, num_turns=3, duration_ms=9000, total_cost_usd=0.2,
        result="", errors=["Reached maximum number of turns (3)"]),
]


def test_the_sdk_stream_is_claude_code_and_names_its_session_by_session_id():
    assert detect_format(SDK_RUN) == "claude-code"
    drafts = drafts_of(claude_code, *SDK_RUN)
    assert {d.session_id for d in drafts} == {SDK_SESSION}


def test_an_sdk_sub_agents_messages_are_a_sidechain_of_the_task_call_they_run_under():
    drafts = drafts_of(claude_code, *SDK_RUN)
    side = [(d.kind, d.text) for d in drafts if (d.meta or {}).get("sidechain")]
    assert side == [("user", "Find config"), ("tool_call", 'Glob {"pattern":"*.toml"}'), ("tool_result", "pyproject.toml")]
    assert {d.meta["agent_id"] for d in drafts if (d.meta or {}).get("sidechain")} == {"toolu_task"}
    # the sub-agent's prompt does not open a turn of the main conversation
    main_turns = [d.turn_id for d in drafts if d.kind == "tool_result" and d.tool["call_id"] == "toolu_task"]
    assert main_turns == [next(d.turn_id for d in drafts if d.kind == "tool_call" and d.tool["call_id"] == "toolu_task")]


def test_sdk_partial_deltas_are_not_events_but_the_run_opening_and_its_end_are():
    drafts = drafts_of(claude_code, *SDK_RUN)
    assert not any("Dele" in d.text for d in drafts)            # the whole message follows as its own line
    init, boundary, end = [d for d in drafts if d.kind == "system"]
    assert init.meta["subtype"] == "init" and "model: claude-sonnet-4-5" in init.text and "tools: Task, Glob" in init.text
    assert boundary.text == "[compact_boundary] trigger=manual preTokens=5000"
    assert end.meta["subtype"] == "result" and end.meta["is_error"] is True
    assert end.text == "[result error_max_turns] turns=3 duration_ms=9000 cost_usd=0.2\nReached maximum number of turns (3)"


def test_an_sdk_api_error_banner_is_flagged_as_the_session_log_flags_it():
    banner = sdk("assistant", "x1", [{"type": "text", "text": "API Error: Overloaded"}], parent="toolu_task", mid="m9",
                 is_api_error_message=True)
    [draft] = drafts_of(claude_code, banner)
    assert (draft.meta.get("api_error"), draft.meta.get("sidechain")) == (True, True)


def test_a_successful_sdk_result_keeps_the_figures_without_repeating_the_reply():
    done = sdk("result", "r2", subtype="success", is_error=False, num_turns=1, result="Your config is pyproject.toml.")
    [end] = drafts_of(claude_code, done)
    assert end.text == "[result success] turns=1"
    assert end.meta["fields"]["result"] == "Your config is pyproject.toml."


def test_a_json_array_of_sdk_messages_reads_as_the_same_events_its_elements_numbered_from_1():
    lines = drafts_of(claude_code, *SDK_RUN)
    out = parse_all(claude_code, SDK_RUN)        # the whole file is one JSON array
    array = [d for d in out if isinstance(d, Draft)]
    assert not [b for b in out if isinstance(b, BadRecord)]
    assert detect_format([SDK_RUN]) == "claude-code"
    assert [(d.kind, d.text, d.key, d.line) for d in array] == [(d.kind, d.text, d.key, d.line) for d in lines]


def test_an_array_on_a_later_line_of_a_session_log_is_still_a_bad_record():
    out = parse_all(claude_code, cc_line("user", "u1", None, message={"role": "user", "content": "hi"}), [1, 2])
    assert [(b.line, b.reason) for b in out if isinstance(b, BadRecord)] == [(2, "not a JSON object")]


def test_ingesting_an_sdk_run_saved_as_one_json_array_detects_it_and_adds_nothing_the_second_time(tmp_path):
    run = tmp_path / "execution.json"
    run.write_text(json.dumps(SDK_RUN, indent=2))
    first = cli("ingest", str(run))
    assert first.code == 0, first.err
    [result] = first.lines()
    assert (result["format"], result["session_id"], result["errors"]) == ("claude-code", SDK_SESSION, 0)
    assert result["added"] == 9
    again = cli("ingest", "--recheck", str(run))
    assert again.code == 0 and again.lines()[0]["added"] == 0


# ---------------------------------------------------------------- claude-code: a web session's `loglines`

def web_line(rtype, content, **fields):
    """A line of a Claude Code on the web session as its API returns it:
    the session log's own records, here without the ids a local log has."""
    return {"type": rtype, "timestamp": "2025-12-24T10:00:00.000Z", "message": {"role": rtype, "content": content},
            **fields}


WEB_LINES = [
    web_line("user", "Add a helper that sums two numbers"),
    web_line("assistant", [{"type": "thinking", "thinking": "A one-line function will do."},
                           {"type": "tool_use", "id": "toolu_w1", "name": "Write",
                            "input": {"file_path": "/p/sums.py", "content": "def add(a, b):\n    return a + b\n"}}]),
    web_line("user", [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "File created at /p/sums.py"}]),
    web_line("assistant", [{"type": "text", "text": "Added add() in sums.py."}]),
]


def test_a_web_sessions_loglines_document_is_claude_code_read_as_its_lines_are(tmp_path):
    document = {"loglines": WEB_LINES}
    assert detect_format([document]) == "claude-code"
    lines = drafts_of(claude_code, *WEB_LINES)
    out = parse_all(claude_code, document)
    assert not [b for b in out if isinstance(b, BadRecord)]
    assert [(d.kind, d.text, d.line) for d in out] == [(d.kind, d.text, d.line) for d in lines]
    assert [d.kind for d in lines] == ["user", "assistant", "tool_call", "tool_result", "assistant"]
    path = tmp_path / "web-session.json"
    path.write_text(json.dumps(document, indent=2))
    run = cli("ingest", str(path))
    assert run.code == 0, run.err
    assert [(r["format"], r["added"], r["errors"]) for r in run.lines()] == [("claude-code", 5, 0)]


# ---------------------------------------------------------------- openai

def test_a_refusal_given_as_a_content_part_is_marked_as_one_like_the_refusal_field():
    chat = [{"role": "user", "content": "help me pick a lock"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}]
    reply = drafts_of(openai, chat)[-1]
    assert (reply.kind, reply.text, reply.meta.get("refusal")) == ("assistant", "I can't help with that.", True)
    responses = {"model": "gpt-5", "input": [
        {"role": "user", "content": "help me pick a lock"},
        {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}]}
    assert drafts_of(openai, responses)[-1].meta.get("refusal") is True


def test_a_file_search_call_keeps_the_passages_it_found_as_its_result():
    body = {"model": "gpt-5", "input": [
        {"role": "user", "content": "what does the handbook say about leave?"},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["leave policy"],
         "results": [{"file_id": "file-1", "filename": "handbook.pdf", "score": 0.9, "text": "25 days of leave."},
                     {"file_id": "file-2", "text": "Carry-over ends in March."}]}]}
    drafts = drafts_of(openai, body)
    call, result = [d for d in drafts if d.tool]
    assert (call.kind, call.tool["call_id"], result.kind, result.tool["call_id"]) == (
        "tool_call", "fs_1", "tool_result", "fs_1")
    assert result.text == "[handbook.pdf]\n25 days of leave.\n\n[file-2]\nCarry-over ends in March."


def thread_message(mid, role, created_at, *content):
    return {"id": mid, "object": "thread.message", "created_at": created_at, "thread_id": "thread_abc", "role": role,
            "content": list(content), "attachments": [], "metadata": {}}


def test_an_assistants_api_thread_listing_reads_oldest_first_with_its_text_values():
    listing = {"object": "list", "has_more": False, "data": [       # the endpoint lists newest first
        thread_message("msg_2", "assistant", 1735689700, {"type": "text", "text": {"value": "It is 4.", "annotations": []}}),
        thread_message("msg_1", "user", 1735689600, {"type": "text", "text": {"value": "What is 2+2?", "annotations": []}},
                       {"type": "image_file", "image_file": {"file_id": "file-9", "detail": "auto"}})]}
    assert detect_format([listing]) == "openai"
    drafts = drafts_of(openai, listing)
    assert [(d.kind, d.text, d.ts) for d in drafts] == [
        ("user", "What is 2+2?\n[image: file-9]", "2025-01-01T00:00:00.000Z"),
        ("assistant", "It is 4.", "2025-01-01T00:01:40.000Z")]
    assert {d.session_id for d in drafts} == {"thread_abc"}


# ---------------------------------------------------------------- codex

def test_codex_fields_of_an_unexpected_type_are_read_around_not_a_parser_crash():
    meta = {"timestamp": "2026-03-01T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": "019b0000-aaaa-7bbb-8ccc-dddddddddddd", "cwd": "/w", "cli_version": "0.98.0"}}
    prompt = {"timestamp": "2026-03-01T09:00:01.000Z", "type": "event_msg",
              "payload": {"type": "user_message", "message": "run the tests", "images": 3, "local_images": "a.png"}}
    odd_item = {"timestamp": "2026-03-01T09:00:02.000Z", "type": "event_msg",
                "payload": {"type": "item_completed", "item": {"type": ["AgentMessage"], "id": "x"}}}
    bare = {"type": {"kind": "message"}, "record_type": "state"}
    out = parse_all(codex, meta, prompt, odd_item, bare)
    assert [d.text for d in out if isinstance(d, Draft) and d.kind == "user"] == ["run the tests"]



def cx_item(sec, payload):
    return {"timestamp": f"2026-03-01T09:00:{sec:02d}.000Z", "type": "response_item", "payload": payload}


def test_a_codex_message_item_written_without_its_type_is_read_by_its_role_and_content():
    out = parse_all(codex, cx_item(1, {"role": "user", "content": "enveloped turn, no type"}),
                    cx_item(2, {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "typed reply"}]}))
    assert [(d.kind, d.text) for d in out] == [("user", "enveloped turn, no type"), ("assistant", "typed reply")]


def test_a_codex_item_of_an_unknown_kind_is_kept_with_its_fields_not_dropped():
    widget = {"type": "canvas_snapshot", "id": "cv_1", "caption": "the chart after the fix"}
    untyped = {"id": "x_2", "note": "an item with no type nor any known field"}
    out = parse_all(codex, cx_item(1, widget), cx_item(2, untyped), cx_item(3, {"type": "ghost_snapshot", "ghost_commit": {}}))
    drafts = [d for d in out if isinstance(d, Draft)]
    assert [(d.kind, d.meta["subtype"], d.meta["item_type"]) for d in drafts] == [
        ("system", "unknown_item", "canvas_snapshot"), ("system", "unknown_item", None)]
    assert "the chart after the fix" in drafts[0].text and "an item with no type" in drafts[1].text


def test_codex_lines_without_the_envelopes_time_take_their_items_own_time_not_the_files():
    meta = {"type": "session_meta", "payload": {"id": "sess-no-envelope-time", "timestamp": "2025-01-15T11:00:00Z",
                                                "instructions": "Use tools."}}
    ask = {"type": "response_item", "payload": {"type": "message", "role": "user", "timestamp": "2025-01-15T11:00:02Z",
                                                "content": [{"type": "input_text", "text": "List the files in /tmp."}]}}
    call = {"type": "response_item", "payload": {"type": "function_call", "call_id": "c1", "name": "shell",
                                                 "arguments": "{}"}}
    drafts = drafts_of(codex, meta, ask, call)
    assert [(d.kind, d.ts) for d in drafts] == [
        ("system", "2025-01-15T11:00:00.000Z"), ("user", "2025-01-15T11:00:02.000Z"), ("tool_call", None)]

# ---------------------------------------------------------------- codex: `codex exec --json`

THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def done(item):
    return {"type": "item.completed", "item": item}


EXEC_RUN = [
    {"type": "thread.started", "thread_id": THREAD},
    {"type": "turn.started"},
    done({"id": "item_0", "type": "reasoning", "text": "**Looking for the README**"}),
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc ls",
                                      "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
    done({"id": "item_1", "type": "command_execution", "command": "bash -lc ls", "aggregated_output": "README.md\n",
          "exit_code": 0, "status": "completed"}),
    done({"id": "item_2", "type": "command_execution", "command": "bash -lc 'cat nope'",
          "aggregated_output": "cat: nope: No such file or directory\n", "exit_code": 1, "status": "failed"}),
    done({"id": "item_3", "type": "mcp_tool_call", "server": "docs", "tool": "search", "arguments": {"q": "readme"},
          "result": {"content": [{"type": "text", "text": "README.md: the intro"}]}, "error": None, "status": "completed"}),
    done({"id": "item_4", "type": "todo_list", "items": [{"text": "read", "completed": True},
                                                         {"text": "summarize", "completed": False}]}),
    done({"id": "item_5", "type": "agent_message", "text": "The repo has a README."}),
    {"type": "turn.completed", "usage": {"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122}},
    {"type": "turn.started"},
    {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
]


def test_codex_exec_json_output_is_codex_and_its_thread_names_the_session():
    assert detect_format(EXEC_RUN) == "codex"
    assert {d.session_id for d in drafts_of(codex, *EXEC_RUN)} == {THREAD}


def test_codex_exec_items_become_calls_results_replies_and_a_todo_list():
    drafts = drafts_of(codex, *EXEC_RUN)
    assert [(d.kind, d.text) for d in drafts] == [
        ("assistant", "<thinking>\n**Looking for the README**\n</thinking>"),
        ("tool_call", 'shell {"command":"bash -lc ls"}'),
        ("tool_result", "README.md\n"),
        ("tool_call", """shell {"command":"bash -lc 'cat nope'"}"""),
        ("tool_result", "cat: nope: No such file or directory\n"),
        ("tool_call", 'search {"q":"readme"}'),
        ("tool_result", "README.md: the intro"),
        ("task_state", "Todos:\n- [x] read\n- [ ] summarize"),
        ("assistant", "The repo has a README."),
        ("system", "stream disconnected before completion")]
    results = [d.tool for d in drafts if d.kind == "tool_result"]
    assert [(r["call_id"], r["is_error"]) for r in results] == [("item_1", False), ("item_2", True), ("item_3", False)]
    assert drafts[1].turn_id == drafts[-2].turn_id != drafts[-1].turn_id     # the failed turn is the second


def test_a_resumed_codex_exec_run_whose_item_ids_start_over_is_not_taken_for_the_first():
    resumed = [{"type": "thread.started", "thread_id": THREAD}, {"type": "turn.started"},
               done({"id": "item_0", "type": "agent_message", "text": "Continuing where we left off."})]
    drafts = drafts_of(codex, *EXEC_RUN, *resumed)
    assert len({d.key for d in drafts}) == len(drafts)
    assert drafts[-1].text == "Continuing where we left off."


def test_a_codex_exec_item_line_without_its_item_is_reported_and_the_rest_still_read():
    broken = {"type": "item.completed", "item": "item_9"}
    out = parse_all(codex, *EXEC_RUN[:3], broken, EXEC_RUN[8])
    assert [(b.line, b.reason) for b in out if isinstance(b, BadRecord)] == [
        (4, "item.completed without an item object")]
    assert [d.text for d in out if isinstance(d, Draft)] == [
        "<thinking>\n**Looking for the README**\n</thinking>", "The repo has a README."]


def test_a_document_whose_title_is_not_a_string_is_still_named_by_its_filename():
    body = {"model": "claude", "messages": [{"role": "user", "content": [
        {"type": "document", "title": ["not", "a", "title"], "filename": "q3.pdf",
         "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
        {"type": "text", "text": "Summarize it."}]}]}
    assert drafts_of(anthropic, body)[0].text == "[document: q3.pdf]\n\nSummarize it."


def test_other_tools_lines_that_merely_carry_a_session_id_are_not_taken_for_the_sdk_stream():
    lookalikes = [{"type": "system", "session_id": "s1", "message": "started"},
                  {"type": "user", "session_id": "s1", "text": "hello"}]
    assert detect_format(lookalikes) is None


# ---------------------------------------------------------------- openai: ChatGPT's data export

def node(node_id, parent, children, role=None, content=None, *, recipient="all", name=None, at=None, **metadata):
    message = None if role is None else {
        "id": node_id, "author": {"role": role, "name": name, "metadata": {}}, "create_time": at,
        "content": content, "status": "finished_successfully", "recipient": recipient, "metadata": metadata}
    return node_id, {"id": node_id, "message": message, "parent": parent, "children": children}


def text(*parts):
    return {"content_type": "text", "parts": list(parts)}


CHATGPT_EXPORT = [{
    "title": "Plotting sales", "create_time": 1740823200.0, "conversation_id": "67c2aa10-conv", "current_node": "a3",
    "mapping": dict([
        node("root", None, ["sys"]),
        node("sys", "root", ["u1"], "system", text("")),                               # hidden, empty
        node("u1", "sys", ["a1", "a1b"], "user",
             {"content_type": "multimodal_text", "parts": [
                 {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-9"}, "Plot this."]},
             at=1740823200.0),
        node("a1b", "u1", [], "assistant", text("An older answer the user regenerated."), at=1740823201.0),
        node("a1", "u1", ["t1"], "assistant", {"content_type": "thoughts", "thoughts": [
            {"summary": "Reading the image", "content": "It is a sales table."}]}, at=1740823202.0),
        node("t1", "a1", ["c1"], "assistant", {"content_type": "code", "language": "python", "text": "plot(df)"},
             recipient="python", at=1740823203.0, model_slug="gpt-4o"),
        node("c1", "t1", ["a3"], "tool", {"content_type": "execution_output", "text": "<Figure 1>"}, name="python",
             at=1740823204.0),
        node("a3", "c1", [], "assistant", text("Here is the plot."), at=1740823205.0, model_slug="gpt-4o"),
    ])}]


def test_a_chatgpt_export_is_openai_and_each_conversation_its_own_session():
    assert detect_format([CHATGPT_EXPORT]) == "openai"
    assert {d.session_id for d in drafts_of(openai, CHATGPT_EXPORT)} == {"67c2aa10-conv"}


def test_a_chatgpt_conversation_tree_is_read_parent_first_with_tools_paired_and_left_branches_marked():
    drafts = drafts_of(openai, CHATGPT_EXPORT)
    assert [(d.kind, d.text) for d in drafts] == [
        ("system", "Plotting sales"),
        ("user", "[image]\nPlot this."),
        ("assistant", "<thinking>\nReading the image\nIt is a sales table.\n</thinking>"),
        ("tool_call", "python plot(df)"),
        ("tool_result", "<Figure 1>"),
        ("assistant", "Here is the plot."),
        ("assistant", "An older answer the user regenerated.")]
    call, result = drafts[3], drafts[4]
    assert call.tool["call_id"] == result.tool["call_id"] == "t1" and result.tool["name"] == "python"
    assert [d.uuid for d in drafts if (d.meta or {}).get("branch") == "alternate"] == ["a1b"]
    assert drafts[1].ts == "2025-03-01T10:00:00.000Z"
    # the node ids key the drafts: reading the export again gives the same keys
    assert [d.key for d in drafts] == [d.key for d in drafts_of(openai, CHATGPT_EXPORT)]


# ---------------------------------------------------------------- anthropic: Claude.ai's data export

CLAUDE_AI_EXPORT = [{
    "uuid": "c0a8e3f2-1111-4222-8333-444455556666", "name": "Quarterly numbers", "created_at": "2025-03-01T10:00:00.000000Z",
    "account": {"uuid": "acc-1"},
    "chat_messages": [
        {"uuid": "m1", "sender": "human", "created_at": "2025-03-01T10:00:00.000000Z", "text": "Sum column B.",
         "content": [{"type": "text", "text": "Sum column B."}],
         "attachments": [{"file_name": "q3.csv", "file_type": "text/csv", "extracted_content": "a,b\n1,2\n3,4"}],
         "files": []},
        {"uuid": "m2", "sender": "assistant", "created_at": "2025-03-01T10:00:05.000000Z", "text": "",
         "content": [{"type": "thinking", "thinking": "Add 2 and 4."},
                     {"type": "tool_use", "name": "repl", "input": {"code": "2+4"}},
                     {"type": "tool_result", "name": "repl", "content": [{"type": "text", "text": "6"}], "is_error": False},
                     {"type": "text", "text": "Column B sums to 6."}],
         "attachments": [], "files": []},
        {"uuid": "m3", "sender": "human", "created_at": "2025-03-01T10:01:00.000000Z", "text": "Thanks!",
         "attachments": [], "files": [{"file_name": "chart.png"}]},
    ]}]


def test_a_claude_ai_export_is_anthropic_and_each_conversation_its_own_session():
    assert detect_format([CLAUDE_AI_EXPORT]) == "anthropic"
    assert {d.session_id for d in drafts_of(anthropic, CLAUDE_AI_EXPORT)} == {"c0a8e3f2-1111-4222-8333-444455556666"}


def test_a_claude_ai_conversation_keeps_files_read_thinking_and_paired_tool_runs():
    drafts = drafts_of(anthropic, CLAUDE_AI_EXPORT)
    assert [(d.kind, d.text) for d in drafts] == [
        ("system", "Quarterly numbers"),
        ("user", "[document: q3.csv]\na,b\n1,2\n3,4\n\nSum column B."),
        ("assistant", "<thinking>\nAdd 2 and 4.\n</thinking>"),
        ("tool_call", 'repl {"code":"2+4"}'),
        ("tool_result", "6"),
        ("assistant", "Column B sums to 6."),
        ("user", "[file: chart.png]\n\nThanks!")]
    assert drafts[3].tool["call_id"] == drafts[4].tool["call_id"]
    assert len({d.key for d in drafts}) == len(drafts)
    assert drafts[-1].turn_id != drafts[1].turn_id and drafts[4].turn_id == drafts[1].turn_id
