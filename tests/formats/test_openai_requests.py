"""Request and batch files of the two chat APIs: OpenAI Batch input/output
lines, Anthropic Message Batches requests/results, Chat Completions
responses without choices, and OpenAI Responses API request bodies (with
an optional saved response object). Each is detected as the right format,
unwrapped and parsed as the request body it holds; `custom_id` names the
conversation."""
from __future__ import annotations

import orjson

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, openai
from reducers.formats.registry import detect_format
from stores.log.lookup import export_events
from stores.store import Store


# ---------------------------------------------------------------- helpers

def parse_all(module, *records, session=None):
    ctx = ParseContext(path="/data/requests.jsonl", source_id="/data/requests.jsonl", session=session)
    return list(module.parse(list(enumerate(records, 1)), ctx))


def parse(module, *records, session=None):
    out = parse_all(module, *records, session=session)
    assert not [b for b in out if isinstance(b, BadRecord)], out
    return [d for d in out if isinstance(d, Draft)]


def shape(drafts):
    return [(d.kind, d.text) for d in drafts]


def tools(drafts):
    return [(d.kind, d.tool["name"], d.tool["call_id"]) for d in drafts if d.tool]


def write_jsonl(path, *records):
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def ingest(tmp_path, path):
    store = Store(tmp_path / "s")
    [result] = list(store.ingest([str(path)], working_state=False))     # what the parser reads, nothing derived
    return result, list(export_events(store))


def user(text):
    return {"role": "user", "content": text}


def oa_batch(custom_id, body, url="/v1/chat/completions"):
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def completion(text, model="gpt-test"):
    return {"id": "chatcmpl-9", "object": "chat.completion", "created": 1767225600, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}


def oa_output(custom_id, body, status=200):
    return {"id": f"batch_req_{custom_id}", "custom_id": custom_id,
            "response": {"status_code": status, "request_id": "req_1", "body": body}, "error": None}


def an_batch(custom_id, params):
    return {"custom_id": custom_id, "params": params}


def an_result(custom_id, result):
    return {"custom_id": custom_id, "result": result}


def an_message(text, model="claude-test"):
    return {"id": "msg_01", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}


def responses(*items, **extra):
    return {"model": "gpt-test", "input": list(items), **extra}


def fn_call(call_id, name, arguments):
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": arguments}


def fn_output(call_id, output):
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# ---------------------------------------------------------------- OpenAI Batch input

def test_an_openai_batch_request_file_is_detected_as_openai():
    lines = [oa_batch("q-1", {"model": "gpt-test", "messages": [user("first question")]}),
             oa_batch("q-2", {"model": "gpt-test", "messages": [user("second question")]})]
    assert detect_format(lines) == "openai"


def test_an_openai_batch_request_is_parsed_as_the_chat_body_it_holds():
    body = {"model": "gpt-test", "messages": [{"role": "system", "content": "Answer in one word."},
                                              user("Colour of a clear sky?")]}
    assert shape(parse(openai, oa_batch("q-1", body))) == [("system", "Answer in one word."),
                                                          ("user", "Colour of a clear sky?")]


def test_the_custom_id_is_the_session_of_a_batch_request():
    drafts = parse(openai, oa_batch("q-1", {"messages": [user("a")]}), oa_batch("q-2", {"messages": [user("b")]}))
    assert [d.session_id for d in drafts] == ["q-1", "q-2"]
    assert all(d.key.startswith(f"oa/{d.session_id}/") for d in drafts)


def test_a_forced_session_overrides_the_custom_id():
    drafts = parse(openai, oa_batch("q-1", {"messages": [user("a")]}), session="mine")
    assert [d.session_id for d in drafts] == ["mine"]


def test_a_batch_request_to_the_responses_endpoint_is_parsed_as_a_responses_body():
    line = oa_batch("r-1", {"model": "gpt-test", "instructions": "Be terse.", "input": "Name a prime above ten."},
                    url="/v1/responses")
    drafts = parse(openai, line)
    assert shape(drafts) == [("system", "Be terse."), ("user", "Name a prime above ten.")]
    assert {d.session_id for d in drafts} == {"r-1"}


def test_an_embeddings_batch_is_not_a_transcript():
    lines = [oa_batch("e-1", {"model": "text-embedding-3-small", "input": "vector me"}, url="/v1/embeddings")]
    assert detect_format(lines) is None


# ---------------------------------------------------------------- OpenAI Batch output

def test_an_openai_batch_output_file_is_detected_as_openai():
    assert detect_format([oa_output("q-1", completion("Blue.")), oa_output("q-2", completion("Green."))]) == "openai"


def test_a_batch_output_line_is_the_assistant_reply_in_the_conversation_its_custom_id_names():
    [reply] = parse(openai, oa_output("q-1", completion("Blue.")))
    assert (reply.kind, reply.text, reply.session_id) == ("assistant", "Blue.", "q-1")
    assert reply.meta == {"model": "gpt-test"}


def test_a_batch_output_line_that_failed_is_an_api_error_system_event():
    failed = {"id": "batch_req_x", "custom_id": "q-3", "response": None,
              "error": {"code": "batch_expired", "message": "This request could not be executed before the window closed."}}
    [event] = parse(openai, failed)
    assert (event.kind, event.session_id, event.meta) == ("system", "q-3", {"subtype": "error"})
    assert event.text == "API error: batch_expired: This request could not be executed before the window closed."


def test_a_batch_output_line_with_an_http_error_body_is_an_api_error_system_event():
    rejected = oa_output("q-4", {"error": {"type": "invalid_request_error", "message": "Unknown model."}}, status=400)
    assert shape(parse(openai, rejected)) == [("system", "API error: invalid_request_error: Unknown model.")]


def test_a_batch_output_line_from_the_responses_endpoint_yields_its_output_items():
    body = {"id": "resp_1", "object": "response", "created_at": 1767225600, "model": "gpt-test", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Eleven.", "annotations": []}]}]}
    [reply] = parse(openai, oa_output("r-1", body))
    assert (reply.kind, reply.text, reply.session_id) == ("assistant", "Eleven.", "r-1")
    assert reply.ts == "2026-01-01T00:00:00.000Z"


# ---------------------------------------------------------------- Anthropic Message Batches

def test_an_anthropic_batch_request_file_is_detected_as_anthropic():
    lines = [an_batch("m-1", {"model": "claude-test", "max_tokens": 64, "messages": [user("hello there")]}),
             an_batch("m-2", {"model": "claude-test", "max_tokens": 64, "messages": [user("and again")]})]
    assert detect_format(lines) == "anthropic"


def test_an_anthropic_batch_request_is_parsed_as_the_messages_body_it_holds():
    params = {"model": "claude-test", "max_tokens": 64, "system": "Reply in French.",
              "messages": [user("Good morning")]}
    drafts = parse(anthropic, an_batch("m-1", params))
    assert shape(drafts) == [("system", "Reply in French."), ("user", "Good morning")]
    assert {d.session_id for d in drafts} == {"m-1"}


def test_an_anthropic_batch_results_file_is_detected_as_anthropic():
    lines = [an_result("m-1", {"type": "succeeded", "message": an_message("Bonjour")}),
             an_result("m-2", {"type": "expired"})]
    assert detect_format(lines) == "anthropic"


def test_a_succeeded_batch_result_is_the_assistant_reply_in_its_custom_id_session():
    [reply] = parse(anthropic, an_result("m-1", {"type": "succeeded", "message": an_message("Bonjour")}))
    assert (reply.kind, reply.text, reply.session_id, reply.meta) == ("assistant", "Bonjour", "m-1",
                                                                      {"model": "claude-test"})


def test_an_errored_batch_result_is_an_api_error_system_event():
    errored = an_result("m-2", {"type": "errored", "error": {"type": "error", "error": {
        "type": "invalid_request_error", "message": "max_tokens is too large"}}})
    [event] = parse(anthropic, errored)
    assert (event.kind, event.text) == ("system", "API error: invalid_request_error: max_tokens is too large")
    assert event.meta == {"subtype": "error", "batch_result": "errored"}


def test_an_expired_batch_result_is_a_system_event_saying_so():
    [event] = parse(anthropic, an_result("m-3", {"type": "expired"}))
    assert (event.kind, event.text, event.session_id) == ("system", "batch request expired", "m-3")


# ---------------------------------------------------------------- chat.completion without choices

def test_a_completion_with_no_choices_adds_nothing_and_is_not_a_bad_record():
    body = {"model": "gpt-test", "messages": [user("tell me")],
            "response": {"object": "chat.completion", "model": "gpt-test", "choices": []}}
    out = parse_all(openai, body)
    assert not [b for b in out if isinstance(b, BadRecord)]
    assert shape(out) == [("user", "tell me")]


# ---------------------------------------------------------------- Responses API replies saved alone

def saved_response(resp_id, *output, previous=None):
    return {"id": resp_id, "object": "response", "status": "completed", "model": "gpt-test",
            "created_at": 1767225600, "output": list(output), "previous_response_id": previous}


def shell_call(call_id):
    return {"type": "shell_call", "id": f"sh_{call_id}", "call_id": call_id, "action": {"commands": ["pwd"]}}


def test_a_responses_reply_saved_alone_or_in_an_array_is_openai_and_keeps_its_output():
    reply = saved_response("resp_1", shell_call("call_1"))
    assert detect_format([reply]) == "openai" and detect_format([[reply]]) == "openai"
    for record in (reply, [reply]):
        (call,) = parse(openai, record)
        assert (call.kind, call.tool["name"], call.tool["call_id"], call.session_id) == (
            "tool_call", "shell", "call_1", "resp_1")


def test_a_saved_reply_that_names_an_earlier_one_as_previous_continues_its_conversation():
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "/home/u"}]}
    drafts = parse(openai, saved_response("resp_1", shell_call("call_1")),
                   saved_response("resp_2", answer, previous="resp_1"))
    assert [(d.kind, d.session_id) for d in drafts] == [("tool_call", "resp_1"), ("assistant", "resp_1")]


def test_an_object_with_an_output_list_but_no_response_mark_is_not_a_transcript():
    assert detect_format([{"output": [{"type": "text", "text": "build log"}]}]) is None


# ---------------------------------------------------------------- Responses API bodies: detection

def test_a_responses_request_file_is_detected_as_openai():
    assert detect_format([responses(user("hi")), {"model": "gpt-test", "input": "plain string input"}]) == "openai"


def test_an_embeddings_request_is_not_a_responses_body():
    assert not openai.is_responses_body({"model": "text-embedding-3-small", "input": "some words"})
    assert not openai.is_responses_body({"model": "m", "input": ["one", "two"]})
    assert detect_format([{"model": "text-embedding-3-small", "input": ["one", "two"]}]) is None


def test_codex_rollouts_of_response_items_are_still_codex():
    enveloped = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "sess-1"}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}},
        {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item", "payload": fn_call("c1", "shell", "{}")},
        {"timestamp": "2026-01-01T00:00:03Z", "type": "response_item", "payload": fn_output("c1", "a.txt")}]
    bare = [{"id": "sess-2", "timestamp": "2026-01-01T00:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
            fn_call("c1", "shell", "{}"), fn_output("c1", "a.txt")]
    assert detect_format(enveloped) == "codex"
    assert detect_format(bare) == "codex"


# ---------------------------------------------------------------- Responses API bodies: parsing

def test_a_string_input_is_one_user_event_kept_verbatim():
    text = "  keep   my spacing\n\nexactly  "
    assert shape(parse(openai, {"model": "gpt-test", "input": text})) == [("user", text)]


def test_instructions_become_a_system_event_before_the_input():
    drafts = parse(openai, responses(user("go"), instructions="You are a careful planner."))
    assert shape(drafts) == [("system", "You are a careful planner."), ("user", "go")]


def test_role_items_become_events_by_role_with_or_without_type_message():
    drafts = parse(openai, responses(
        {"role": "developer", "content": "Prefer tables."},
        {"type": "message", "role": "system", "content": "Stay on topic."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "compare two lamps"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Lamp A is brighter."}]}))
    assert shape(drafts) == [("system", "Prefer tables."), ("system", "Stay on topic."),
                             ("user", "compare two lamps"), ("assistant", "Lamp A is brighter.")]
    assert drafts[0].meta == {"role": "developer"}


def test_an_input_image_part_is_a_placeholder_in_the_text_and_kept_as_media():
    image = {"type": "input_image", "image_url": "https://example.invalid/cat.png", "detail": "low"}
    [msg] = parse(openai, responses({"role": "user", "content": [{"type": "input_text", "text": "what animal?"}, image]}))
    assert msg.text == "what animal?\n[image]"
    assert msg.media == [image]


def test_a_function_call_and_its_output_pair_by_call_id():
    drafts = parse(openai, responses(user("weather in Lima?"), fn_call("call_7", "get_weather", '{"city": "Lima"}'),
                                     fn_output("call_7", "18C and cloudy")))
    call, result = [d for d in drafts if d.tool]
    assert call.tool == {"name": "get_weather", "call_id": "call_7", "input": {"city": "Lima"}}
    assert call.text == 'get_weather {"city": "Lima"}'
    assert result.tool == {"name": "get_weather", "call_id": "call_7", "is_error": False}
    assert result.text == "18C and cloudy"


def test_a_function_call_output_given_as_parts_is_flattened():
    drafts = parse(openai, responses(fn_call("c2", "snapshot", "{}"), fn_output("c2", [
        {"type": "input_text", "text": "window captured"}, {"type": "input_image", "image_url": "data:image/png;base64,AA=="}])))
    [result] = [d for d in drafts if d.kind == "tool_result"]
    assert result.text == "window captured\n[image]"
    assert result.media == [{"type": "input_image", "image_url": "data:image/png;base64,AA=="}]


def test_a_custom_tool_call_keeps_its_free_text_input_and_pairs_with_its_output():
    patch = "*** Begin Patch\n*** Update File: notes.md\n+one more line\n*** End Patch"
    drafts = parse(openai, responses(
        {"type": "custom_tool_call", "call_id": "ct_1", "name": "apply_patch", "input": patch},
        {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "patched 1 file"}))
    assert tools(drafts) == [("tool_call", "apply_patch", "ct_1"), ("tool_result", "apply_patch", "ct_1")]
    assert drafts[0].tool["input"] == patch
    assert drafts[1].text == "patched 1 file"


def test_a_reasoning_summary_becomes_a_thinking_event():
    item = {"type": "reasoning", "id": "rs_1", "encrypted_content": "opaque",
            "summary": [{"type": "summary_text", "text": "Check units first."},
                        {"type": "summary_text", "text": "Then convert."}]}
    [thought] = parse(openai, responses(item))
    assert (thought.kind, thought.text) == ("assistant", "<thinking>\nCheck units first.\n\nThen convert.\n</thinking>")
    assert thought.meta == {"thinking": True}


def test_reasoning_with_only_encrypted_content_adds_nothing():
    drafts = parse(openai, responses(user("q"), {"type": "reasoning", "summary": [], "encrypted_content": "opaque"}))
    assert shape(drafts) == [("user", "q")]


def test_an_item_of_an_unknown_type_leaves_a_placeholder():
    drafts = parse(openai, responses(user("q"), {"type": "item_reference", "id": "msg_earlier"}))
    assert shape(drafts) == [("user", "q"), ("system", "[item_reference: msg_earlier]")]


def test_user_messages_open_turns_and_tool_outputs_stay_in_the_turn_of_their_call():
    drafts = parse(openai, responses(user("first"), fn_call("c1", "look", "{}"), fn_output("c1", "seen"),
                                     {"role": "assistant", "content": "done"}, user("second")))
    turns = [d.turn_id for d in drafts]
    assert len(set(turns[:4])) == 1 and turns[4] != turns[0]


def test_a_saved_response_object_adds_its_output_items_with_the_model():
    response = {"id": "resp_9", "object": "response", "created_at": 1767225600, "model": "gpt-test-2025",
                "output": [fn_call("c9", "search", '{"q": "tides"}'),
                           {"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": "High tide is at noon."}]}]}
    drafts = parse(openai, responses(user("when is high tide?"), response=response))
    assert shape(drafts)[1:] == [("tool_call", 'search {"q": "tides"}'), ("assistant", "High tide is at noon.")]
    assert all(d.meta["model"] == "gpt-test-2025" for d in drafts[1:])
    assert drafts[2].ts == "2026-01-01T00:00:00.000Z"


def test_a_failed_response_object_is_an_api_error_system_event():
    response = {"object": "response", "status": "failed", "output": [],
                "error": {"code": "server_error", "message": "Something broke."}}
    drafts = parse(openai, responses(user("q"), response=response))
    assert shape(drafts) == [("user", "q"), ("system", "API error: server_error: Something broke.")]


def test_the_conversation_parameter_names_the_session():
    drafts = parse(openai, responses(user("q"), conversation="conv_42"),
                   responses(user("r"), conversation={"id": "conv_43"}))
    assert [d.session_id for d in drafts] == ["conv_42", "conv_43"]


def test_reparsing_gives_the_same_unique_keys():
    body = responses(user("q"), fn_call("c1", "f", "{}"), fn_output("c1", "x"), instructions="sys",
                     response={"object": "response", "output": [{"role": "assistant", "content": "ok"}]})
    first, second = parse(openai, body), parse(openai, body)
    assert [d.key for d in first] == [d.key for d in second]
    assert len({d.key for d in first}) == len(first) == 5


def test_an_item_with_neither_role_nor_type_is_a_bad_record_and_the_rest_still_parses():
    out = parse_all(openai, responses(user("q"), {"content": "orphan"}, user("r")))
    assert len([b for b in out if isinstance(b, BadRecord)]) == 1
    assert shape([d for d in out if isinstance(d, Draft)]) == [("user", "q"), ("user", "r")]


# ---------------------------------------------------------------- through ingest

def test_ingesting_an_openai_batch_request_file(tmp_path):
    path = write_jsonl(tmp_path / "batch_in.jsonl",
                       oa_batch("q-1", {"model": "gpt-test", "messages": [user("What is 2+2?  ")]}),
                       oa_batch("q-2", {"model": "gpt-test", "messages": [user("Spell 'cat'\nbackwards")]}))
    result, events = ingest(tmp_path, path)
    assert (result.format, result.added, result.errors, result.sessions) == ("openai", 2, 0, 2)
    assert [(e["session_id"], e["kind"], e["text"]) for e in events] == [
        ("q-1", "user", "What is 2+2?  "), ("q-2", "user", "Spell 'cat'\nbackwards")]


def test_ingesting_an_openai_batch_output_file(tmp_path):
    failed = {"id": "batch_req_3", "custom_id": "q-3", "response": None,
              "error": {"code": "batch_expired", "message": "too late"}}
    path = write_jsonl(tmp_path / "batch_out.jsonl", oa_output("q-1", completion("4")), failed)
    result, events = ingest(tmp_path, path)
    assert (result.format, result.added, result.errors) == ("openai", 2, 0)
    assert [(e["session_id"], e["kind"], e["text"]) for e in events] == [
        ("q-1", "assistant", "4"), ("q-3", "system", "API error: batch_expired: too late")]


def test_ingesting_anthropic_batch_requests_and_results(tmp_path):
    requests = write_jsonl(tmp_path / "an_in.jsonl",
                           an_batch("m-1", {"model": "claude-test", "max_tokens": 32, "messages": [user(" Hola ")]}))
    results = write_jsonl(tmp_path / "an_out.jsonl", an_result("m-1", {"type": "succeeded", "message": an_message("Hi")}))
    store = Store(tmp_path / "s")
    got = list(store.ingest([str(requests), str(results)]))
    assert [(r.format, r.added, r.errors) for r in got] == [("anthropic", 1, 0), ("anthropic", 1, 0)]
    assert [(e["session_id"], e["kind"], e["text"]) for e in export_events(store)] == [
        ("m-1", "user", " Hola "), ("m-1", "assistant", "Hi")]


def test_ingesting_a_responses_request_log_pairs_every_call_with_its_result(tmp_path):
    question = "Find the  largest file\tin /tmp, please"
    body = responses(
        user(question),
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "List, then sort by size."}]},
        fn_call("call_a", "shell", '{"cmd": "ls -l /tmp"}'),
        fn_call("call_b", "shell", '{"cmd": "du -a /tmp"}'),
        fn_output("call_b", "12 /tmp/x"),
        fn_output("call_a", "-rw 12 x"),
        {"type": "custom_tool_call", "call_id": "call_c", "name": "note", "input": "x is biggest"},
        {"type": "custom_tool_call_output", "call_id": "call_c", "output": "noted"},
        instructions="Use the shell tool.",
        response={"object": "response", "model": "gpt-test",
                  "output": [{"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": "/tmp/x is the largest."}]}]})
    path = write_jsonl(tmp_path / "responses.jsonl", body)
    result, events = ingest(tmp_path, path)
    assert (result.format, result.errors, result.sessions) == ("openai", 0, 1)
    kinds = [e["kind"] for e in events]
    assert {k: kinds.count(k) for k in set(kinds)} == {"system": 1, "user": 1, "assistant": 2,
                                                      "tool_call": 3, "tool_result": 3}
    assert result.added == len(events) == 10
    calls = {e["tool"]["call_id"]: e["tool"]["name"] for e in events if e["kind"] == "tool_call"}
    outputs = {e["tool"]["call_id"]: e["tool"]["name"] for e in events if e["kind"] == "tool_result"}
    assert calls == outputs == {"call_a": "shell", "call_b": "shell", "call_c": "note"}
    assert [e["text"] for e in events if e["kind"] == "user"] == [question]


def test_reingesting_a_responses_request_log_adds_nothing(tmp_path):
    path = write_jsonl(tmp_path / "responses.jsonl", responses(user("q"), fn_call("c1", "f", "{}"), fn_output("c1", "x")))
    store = Store(tmp_path / "s")
    [first] = list(store.ingest([str(path)]))
    path.write_bytes(path.read_bytes() + b"\n")          # touched: parsed again, nothing new
    [second] = list(store.ingest([str(path)]))
    assert first.added == 3 and (second.added, second.skipped) == (0, 3)


def test_a_call_the_api_ran_itself_carries_its_result_in_the_same_item():
    item = {"type": "mcp_call", "id": "mcp_1", "server_label": "docs", "name": "lookup",
            "arguments": '{"term": "tide"}', "output": "Tides follow the moon.", "error": None}
    drafts = parse(openai, responses(user("q"), item))
    assert tools(drafts) == [("tool_call", "lookup", "mcp_1"), ("tool_result", "lookup", "mcp_1")]
    assert drafts[1].meta == {"item": "mcp_call", "server_label": "docs"}
    assert (drafts[2].text, drafts[2].tool["is_error"]) == ("Tides follow the moon.", False)


# ---------------------------------------------------------------- Responses: chains and compaction

def responses_call(input_items, response_id, output_text, previous=None):
    body = {"model": "gpt-test", "input": input_items,
            "response": {"object": "response", "id": response_id, "created_at": 1767000000,
                         "output": [{"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": output_text}]}]}}
    if previous:
        body["previous_response_id"] = previous
    return body


def test_a_request_that_continues_an_earlier_response_joins_its_session():
    first = responses_call([user("The secret key is sesame")], "resp_1", "Noted.")
    second = responses_call([user("What is the secret code?")], "resp_2", "It is sesame.", previous="resp_1")
    unrelated = responses_call([user("Hello")], "resp_3", "Hi.")
    drafts = parse(openai, first, second, unrelated)
    sessions = [d.session_id for d in drafts]
    assert sessions[0] == sessions[1] == sessions[2] == sessions[3]
    assert sessions[4] != sessions[0]
    assert len({d.key for d in drafts}) == len(drafts)


def test_the_history_a_compaction_kept_is_marked_not_new_user_turns():
    body = {"model": "gpt-test", "input": [user("sum 3, 3?"), user("and 4, 4?")],
            "response": {"object": "response.compaction", "id": "cmp_1", "output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "sum 3, 3?"}]},
                {"type": "compaction", "encrypted_content": "opaque"}]}}
    drafts = parse(openai, body)
    assert [(d.kind, (d.meta or {}).get("subtype")) for d in drafts] == [
        ("user", None), ("user", None), ("system", "compaction"), ("system", None)]


def test_an_mcp_tool_listing_keeps_the_tools_it_offered():
    body = {"model": "gpt-test", "input": [user("what games?"), {
        "type": "mcp_list_tools", "id": "mcpl_1", "server_label": "games",
        "tools": [{"name": "get_my_games", "description": "Returns my favorite games.", "input_schema": {}}]}]}
    assert parse(openai, body)[-1].text == "[mcp_list_tools]\ngames: get_my_games - Returns my favorite games."


def test_an_anthropic_compaction_block_is_a_system_summary_apart_from_the_reply():
    body = {"model": "claude", "messages": [user("hello"), {"role": "assistant", "content": [
        {"type": "compaction", "content": "Summary: user said hello."},
        {"type": "text", "text": "Hello! How can I help?"}]}]}
    assert [(d.kind, d.text, (d.meta or {}).get("subtype")) for d in parse(anthropic, body)] == [
        ("user", "hello", None), ("system", "Summary: user said hello.", "compaction"),
        ("assistant", "Hello! How can I help?", None)]


def test_a_server_tool_error_keeps_its_message():
    body = {"model": "claude", "messages": [user("view it"), {"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "text_editor_code_execution", "input": {}},
        {"type": "text_editor_code_execution_tool_result", "tool_use_id": "srvtoolu_1",
         "content": {"type": "text_editor_code_execution_tool_result_error", "error_code": "unavailable",
                     "error_message": "Failed to parse tool response"}}]}]}
    result = [d for d in parse(anthropic, body) if d.kind == "tool_result"][0]
    assert (result.text, result.tool["is_error"]) == ("error: unavailable: Failed to parse tool response", True)
