"""Chat data as applications log it rather than as an API takes it: a call
logged as {"request": <body>, "response": <reply>}, a JSON array of whole
conversations, a reply saved on its own, a client's camelCase keys. Each
is detected as the API it was sent to and read without losing a message."""
from __future__ import annotations

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, openai
from reducers.formats.registry import detect_format


def parse(module, *records):
    ctx = ParseContext(path="/data/calls.jsonl", source_id="/data/calls.jsonl")
    out = list(module.parse(list(enumerate(records, 1)), ctx))
    return [d for d in out if isinstance(d, Draft)], [b for b in out if isinstance(b, BadRecord)]


def shape(drafts):
    return [(d.kind, d.text) for d in drafts]


def _completion(text: str, model: str = "gpt-4o-mini") -> dict:
    return {"object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


# ---------------------------------------------------------------- logged calls

def test_a_logged_chat_completions_call_keeps_the_prompt_and_the_reply_with_its_model():
    line = {"id": "req-3", "request": {"model": "gpt-4o-mini",
                                       "messages": [{"role": "user", "content": [{"type": "text", "text": "Is it safe?"}]}]},
            "response": _completion("Rotate that key now."), "user_feedback": "down"}
    assert detect_format([line]) == "openai"
    drafts, bad = parse(openai, line)
    assert not bad
    assert shape(drafts) == [("user", "Is it safe?"), ("assistant", "Rotate that key now.")]
    assert drafts[1].meta["model"] == "gpt-4o-mini"
    assert {d.session_id for d in drafts} == {"req-3"}


def test_logged_calls_that_resend_the_history_store_each_message_once():
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    second = first + [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]
    drafts, bad = parse(openai, {"request": {"messages": first}, "response": _completion("Hello.")},
                        {"request": {"messages": second}, "response": _completion("Goodbye.")})
    assert not bad
    assert shape(drafts) == [("system", "Be brief."), ("user", "Hi"), ("assistant", "Hello."),
                             ("user", "Bye"), ("assistant", "Goodbye.")]
    assert len({d.session_id for d in drafts}) == 1
    assert len({d.key for d in drafts}) == len(drafts)


def test_a_failed_call_logged_beside_its_messages_is_kept_as_an_error_event():
    line = {"messages": [{"role": "user", "content": "Cancel my order"},
                         {"role": "assistant", "content": "Sorry, something went wrong."}],
            "error": "TimeoutError: upstream"}
    drafts, bad = parse(openai, line)
    assert not bad
    assert shape(drafts)[-1] == ("system", "API error: TimeoutError: upstream")
    assert drafts[-1].meta["subtype"] == "error"


def test_a_logged_messages_api_call_is_anthropic():
    line = {"request": {"model": "claude-sonnet-4-5", "system": "You are terse.",
                        "messages": [{"role": "user", "content": "Write a haiku."}]},
            "response": {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": [{"type": "text", "text": "Red, then green."}]}}
    assert detect_format([line]) == "anthropic"
    drafts, bad = parse(anthropic, line)
    assert not bad
    assert shape(drafts) == [("system", "You are terse."), ("user", "Write a haiku."), ("assistant", "Red, then green.")]
    assert drafts[-1].meta == {"model": "claude-sonnet-4-5"}


# ---------------------------------------------------------------- arrays of conversations

def test_a_json_array_of_conversations_is_one_conversation_each():
    doc = [{"messages": [{"role": "user", "content": "one"}, {"role": "assistant", "content": "1"}]},
           {"messages": [{"role": "user", "content": "two"}, {"role": "assistant", "content": "2"}]}]
    assert detect_format([doc]) == "openai"
    drafts, bad = parse(openai, doc)
    assert not bad
    assert shape(drafts) == [("user", "one"), ("assistant", "1"), ("user", "two"), ("assistant", "2")]
    assert drafts[0].session_id != drafts[2].session_id


def test_an_array_of_messages_api_bodies_and_logged_calls_is_read_whole():
    doc = [{"id": "msg_01", "request": {"system": "Be kind.", "messages": [{"role": "user", "content": "Hi"}]},
            "response": {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hello"}]}},
           {"system": [{"type": "text", "text": "Use tools."}],
            "messages": [{"role": "user", "content": "17*23?"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "calc",
                                                            "input": {"expr": "17*23"}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "391"}]}]}]
    assert detect_format([doc]) == "anthropic"
    drafts, bad = parse(anthropic, doc)
    assert not bad
    assert [d.kind for d in drafts] == ["system", "user", "assistant", "system", "user", "tool_call", "tool_result"]
    call, result = drafts[-2:]
    assert call.tool["call_id"] == result.tool["call_id"] == "tu1" and result.tool["name"] == "calc"


# ---------------------------------------------------------------- other shapes

def test_camel_case_tool_keys_pair_the_call_with_its_result():
    body = {"model": "mistral-large", "messages": [
        {"role": "user", "content": "Weather in SF?"},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "fk6q08UDy", "function": {"name": "get_weather", "arguments": "{\"location\": \"SF\"}"}}]},
        {"role": "tool", "toolCallId": "fk6q08UDy", "content": "71 degrees"}]}
    assert detect_format([body]) == "openai"
    drafts, _ = parse(openai, body)
    call, result = [d for d in drafts if d.tool]
    assert (call.tool["call_id"], call.tool["name"], call.tool["input"]) == ("fk6q08UDy", "get_weather", {"location": "SF"})
    assert (result.tool["call_id"], result.tool["name"], result.text) == ("fk6q08UDy", "get_weather", "71 degrees")


def test_a_chat_completion_saved_on_its_own_is_its_reply():
    doc = {"id": "chatcmpl-1", **_completion("Try Notewell.", model="gpt-4o")}
    assert detect_format([doc]) == "openai"
    drafts, bad = parse(openai, doc)
    assert not bad
    assert shape(drafts) == [("assistant", "Try Notewell.")]
    assert drafts[0].meta["model"] == "gpt-4o" and drafts[0].session_id == "chatcmpl-1"


def test_a_messages_api_reply_with_a_compaction_block_keeps_the_summary_as_a_system_event():
    doc = {"type": "message", "role": "assistant", "model": "claude-opus-4-6",
           "content": [{"type": "compaction", "content": "## Summary\nThe user shared a long document."},
                       {"type": "text", "text": "Here is the overview."}]}
    assert detect_format([doc]) == "anthropic"
    drafts, _ = parse(anthropic, doc)
    assert shape(drafts) == [("system", "## Summary\nThe user shared a long document."),
                             ("assistant", "Here is the overview.")]
    assert drafts[0].meta["subtype"] == "compaction"
    assert all(d.meta["model"] == "claude-opus-4-6" for d in drafts)


def test_a_bare_messages_api_reply_is_anthropic_and_keeps_its_model():
    doc = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [{"type": "text", "text": "First."}, {"type": "text", "text": "Second."}]}
    assert detect_format([doc]) == "anthropic"
    drafts, _ = parse(anthropic, doc)
    assert shape(drafts) == [("assistant", "First.\n\nSecond.")]
    assert drafts[0].meta == {"model": "claude-sonnet-4-5"}


def test_a_failed_messages_api_call_in_a_call_log_is_an_error_event():
    line = {"request": {"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}]},
            "error": "overloaded_error: retry later"}
    drafts, bad = parse(anthropic, line)
    assert not bad
    assert shape(drafts)[-1] == ("system", "API error: overloaded_error: retry later")


def test_logged_calls_whose_replies_only_call_tools_continue_the_right_conversation():
    def reply_calling(call_id):
        return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}]}
    ask = [{"role": "user", "content": "list"}]
    history_a = ask + [reply_calling("call_a")["choices"][0]["message"], {"role": "tool", "tool_call_id": "call_a", "content": "a"}]
    drafts, bad = parse(openai, {"request": {"messages": ask}, "response": reply_calling("call_b")},
                        {"request": {"messages": ask}, "response": reply_calling("call_a")},
                        {"request": {"messages": history_a}, "response": _completion("Found a.")})
    assert not bad
    results = [d for d in drafts if d.kind == "tool_result"]
    calls = {d.tool["call_id"]: d.session_id for d in drafts if d.kind == "tool_call"}
    # the third call resends the first call's history: its result and reply land in that conversation
    assert [(r.tool["call_id"], r.session_id == calls["call_a"]) for r in results] == [("call_a", True)]
    assert drafts[-1].session_id == calls["call_a"] != calls["call_b"]
    assert [d.kind for d in drafts].count("user") == 2          # one per conversation, none read twice


def test_an_ollama_chat_reply_keeps_its_tool_calls_logged_or_saved_alone():
    reply = {"model": "qwen2.5-coder", "created_at": "2026-03-01T10:00:00Z", "done": True, "done_reason": "stop",
             "message": {"role": "assistant", "content": "",
                         "tool_calls": [{"function": {"name": "run_command", "arguments": {"command": "df -h"}}}]}}
    logged = {"request": {"model": "qwen2.5-coder", "messages": [{"role": "user", "content": "Disk space?"}]},
              "response": reply}
    for record, kinds in ((logged, ["user", "tool_call"]), (reply, ["tool_call"])):
        assert detect_format([record]) == "openai"
        drafts, bad = parse(openai, record)
        assert not bad and [d.kind for d in drafts] == kinds
        assert drafts[-1].tool["name"] == "run_command" and drafts[-1].tool["input"] == {"command": "df -h"}
        assert drafts[-1].meta["model"] == "qwen2.5-coder"


def test_llama_stack_tool_calls_and_ipython_results_keep_their_names_and_ids():
    body = {"model": "llama3.2", "messages": [
        {"role": "user", "content": "latest release?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"call_id": "c-7", "tool_name": "brave_search", "arguments": {"query": "release"}}]},
        {"role": "ipython", "call_id": "c-7", "tool_name": "brave_search", "content": "v2.1 shipped"}]}
    assert detect_format([body]) == "openai"
    drafts, bad = parse(openai, body)
    assert not bad
    call, result = drafts[1:]
    assert (call.kind, call.tool["name"], call.tool["call_id"]) == ("tool_call", "brave_search", "c-7")
    assert (result.kind, result.tool["name"], result.tool["call_id"], result.text) == (
        "tool_result", "brave_search", "c-7", "v2.1 shipped")


def test_logged_ollama_calls_that_resend_the_history_store_each_message_once():
    def reply(text):
        return {"model": "qwen2.5", "done": True, "message": {"role": "assistant", "content": text}}
    first = [{"role": "user", "content": "Hi"}]
    second = first + [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]
    drafts, bad = parse(openai, {"request": {"messages": first}, "response": reply("Hello.")},
                        {"request": {"messages": second}, "response": reply("Goodbye.")})
    assert not bad
    assert shape(drafts) == [("user", "Hi"), ("assistant", "Hello."), ("user", "Bye"), ("assistant", "Goodbye.")]
    assert len({d.session_id for d in drafts}) == 1


def _responses_call(items: list, output: list, rid: str, previous: str | None = None) -> dict:
    body = {"model": "gpt-4o-mini", "input": items, **({"previous_response_id": previous} if previous else {})}
    return {"request": body, "response": {"object": "response", "id": rid, "model": "gpt-4o-mini", "output": output}}


def test_logged_responses_api_calls_are_read_in_both_layouts_and_chain_by_previous_response_id():
    call = {"type": "function_call", "call_id": "call_T", "name": "get_temperature", "arguments": '{"city":"SF"}'}
    first = _responses_call([{"role": "user", "content": [{"type": "input_text", "text": "Weather in SF?"}]}],
                            [call], "resp_1")
    second = _responses_call([{"type": "function_call_output", "call_id": "call_T", "output": "72F"}],
                             [{"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "It is 72F."}]}], "resp_2", "resp_1")
    captured = {"request": {"method": "POST", "url": "https://api.openai.com/v1/responses", "body": second["request"]},
                "response": {"status": 200, "body": second["response"]}}
    for later in (second, captured):
        assert detect_format([first, later]) == "openai"
        drafts, bad = parse(openai, first, later)
        assert not bad
        assert shape(drafts) == [("user", "Weather in SF?"), ("tool_call", 'get_temperature {"city":"SF"}'),
                                 ("tool_result", "72F"), ("assistant", "It is 72F.")]
        assert drafts[2].tool["call_id"] == "call_T" and len({d.session_id for d in drafts}) == 1


def test_a_resent_tool_call_message_with_empty_content_continues_the_conversation():
    # The reply said "content": null; the client resends it with "content": "".
    calls = [{"id": "call_9", "type": "function", "function": {"name": "search", "arguments": "{}"}}]
    ask = {"role": "user", "content": "Search for tutorials"}
    first = {"request": {"model": "gpt-4o", "messages": [ask]},
             "response": {"object": "chat.completion", "choices": [
                 {"message": {"role": "assistant", "content": None, "tool_calls": calls}}]}}
    second = {"request": {"model": "gpt-4o", "messages": [
        ask, {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_9", "content": "unavailable"}]}, "response": _completion("Sorry.")}
    drafts, bad = parse(openai, first, second)
    assert not bad
    assert [d.kind for d in drafts] == ["user", "tool_call", "tool_result", "assistant"]
    assert len({d.session_id for d in drafts}) == 1


def test_other_traffic_in_a_capture_is_kept_as_sent_in_the_conversation_not_reported_as_bad():
    call = {"request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions",
                        "body": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}},
            "response": {"status": 200, "body": _completion("hello")}}
    telemetry = {"request": {"method": "POST", "url": "https://telemetry.example/runs", "body": {"run_id": "r-1"}},
                 "response": {"status": 201, "body": {}}}
    drafts, bad = parse(openai, call, telemetry)
    assert not bad
    assert shape(drafts)[-1] == ("system", 'POST https://telemetry.example/runs -> 201\n{"run_id":"r-1"}')
    assert drafts[-1].meta["subtype"] == "http_exchange" and len({d.session_id for d in drafts}) == 1


# ---------------------------------------------------------------- request bodies, one per call

def test_successive_messages_api_bodies_of_one_agent_are_one_conversation_read_once():
    ask = {"role": "user", "content": [{"type": "text", "text": "What is 2 + 2?"}]}
    first = {"model": "claude-x", "system": "Use the shell.", "messages": [ask],
             "response": {"role": "assistant", "content": [
                 {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo 4"},
                  "caller": {"type": "direct"}}]}}
    # the client resends the call under its own tool name, without the reply's extra fields
    resent = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell",
                                                "input": {"command": "echo 4"}}]}
    second = {"model": "claude-x", "system": "Use the shell.",
              "messages": [ask, resent, {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"}]}],
              "response": {"role": "assistant", "content": [{"type": "text", "text": "It is 4."}]}}
    assert detect_format([first, second]) == "anthropic"
    drafts, bad = parse(anthropic, first, second)
    assert not bad
    assert shape(drafts) == [("system", "Use the shell."), ("user", "What is 2 + 2?"),
                             ("tool_call", 'bash {"command":"echo 4"}'), ("tool_result", "4"), ("assistant", "It is 4.")]
    assert len({d.session_id for d in drafts}) == 1


def test_successive_chat_completions_bodies_are_one_conversation_but_training_examples_stay_apart():
    ask = {"role": "user", "content": "Capital of France?"}
    first = {"model": "gpt-4o", "messages": [ask], "response": _completion("Paris.")}
    second = {"model": "gpt-4o", "messages": [ask, {"role": "assistant", "content": "Paris."},
                                              {"role": "user", "content": "And Italy?"}], "response": _completion("Rome.")}
    drafts, bad = parse(openai, first, second)
    assert not bad
    assert shape(drafts) == [("user", "Capital of France?"), ("assistant", "Paris."), ("user", "And Italy?"),
                             ("assistant", "Rome.")]
    assert len({d.session_id for d in drafts}) == 1
    # the fine-tuning layout (no model): one conversation per line, even when one line extends another
    examples = [{"messages": [ask, {"role": "assistant", "content": "Paris."}]},
                {"messages": [ask, {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "And Italy?"},
                              {"role": "assistant", "content": "Rome."}]}]
    drafts, _ = parse(openai, *examples)
    assert len(drafts) == 6 and len({d.session_id for d in drafts}) == 2
