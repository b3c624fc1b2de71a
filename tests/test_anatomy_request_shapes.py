"""Request-body shapes the APIs document beyond plain text messages: each is
recorded with the sizes the model reads, and nothing the body sends is
left out or counted as something else.

Expected figures are worked out here from the bodies (UTF-8 bytes of each
text the model reads)."""
from __future__ import annotations

import json

from tests.helpers import cli


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def _record(tmp_path, body, session: str, name: str = "body.json"):
    path = tmp_path / name
    path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    run = cli("anatomy", "record", str(path), "--session", session, "--json")
    assert run.code == 0, run.err
    [rec] = run.lines()
    return rec


def test_a_document_given_as_content_blocks_is_text_the_model_reads(tmp_path):
    chunks = ["Clause 1: the tenant pays monthly.", "Clause 2: pets need consent — ✓"]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 200, "messages": [{"role": "user", "content": [
        {"type": "document", "title": "lease", "source": {"type": "content", "content": [
            {"type": "text", "text": chunks[0]}, {"type": "text", "text": chunks[1]}]}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}},
        {"type": "text", "text": "May I keep a cat?"}]}]}
    rec = _record(tmp_path, body, "doc")
    assert rec["userMessageBytes"] == sum(map(_utf8, chunks)) + _utf8("May I keep a cat?")
    assert rec["mediaBlocks"] == 1                     # only the PDF is media
    assert rec["api"] == "anthropic-messages"


def test_an_assistant_refusal_is_counted_as_the_reply_it_was(tmp_path):
    refusal = "I can't help with that request."
    as_field = {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "Write malware"},
        {"role": "assistant", "content": None, "refusal": refusal},
        {"role": "user", "content": "Then a haiku"}]}
    as_part = {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "Write malware"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": refusal}]},
        {"role": "user", "content": "Then a haiku"}]}
    for i, body in enumerate((as_field, as_part)):
        rec = _record(tmp_path, body, f"refusal-{i}")
        assistant = rec["messages"][1]
        assert assistant["bytes"] == _utf8(refusal) and assistant["slices"] == {"history": _utf8(refusal)}
        assert rec["slices"]["history"]["bytes"] == _utf8("Write malware") + _utf8(refusal)


def test_a_capture_that_logged_the_bodies_as_json_strings_is_a_model_call(tmp_path):
    request = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "Be exact.",
               "messages": [{"role": "user", "content": "How many legs has a spider?"}]}
    reply = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Eight."}],
             "usage": {"input_tokens": 17, "output_tokens": 3}}
    exchange = {"request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                            "headers": {"content-type": "application/json"}, "body": json.dumps(request, indent=1)},
                "response": {"status": 200, "body": json.dumps(reply)}}
    rec = _record(tmp_path, exchange, "wire", "capture.jsonl")
    assert rec["systemPromptBytes"] == _utf8("Be exact.")
    assert rec["userMessageBytes"] == _utf8("How many legs has a spider?")
    assert rec["contextTokens"] == 17 and rec["contextTokensSource"] == "usage"
    # ingest reads the same capture as a conversation, the reply included
    ingest = cli("ingest", str(tmp_path / "capture.jsonl"), "--json")
    assert ingest.code == 0, ingest.err
    [summary] = ingest.lines()
    assert summary["anatomy"] == 1 and summary["added"] >= 3
    shown = cli("show", f"1..{summary['added']}", "--json").lines()
    assert [e["text"] for e in shown if e["kind"] in ("user", "assistant")] == ["How many legs has a spider?", "Eight."]


def test_a_capture_body_string_that_is_no_json_stays_other_traffic(tmp_path):
    exchange = {"request": {"method": "POST", "url": "https://example.com/upload", "body": "{not json"},
                "response": {"status": 400}}
    path = tmp_path / "noise.jsonl"
    path.write_text(json.dumps(exchange))
    run = cli("anatomy", "record", str(path), "--session", "noise")
    assert run.code == 1 and "only other capture traffic" in run.err


def test_blocks_only_the_messages_api_has_name_the_api(tmp_path):
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    search = {"type": "search_result", "source": "https://docs.example.com", "title": "Guide",
              "content": [{"type": "text", "text": "Timeouts are 30 s."}]}
    for i, block in enumerate((image, search)):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 100,
                "messages": [{"role": "user", "content": [block, {"type": "text", "text": "Explain"}]}]}
        assert _record(tmp_path, body, f"api-{i}")["api"] == "anthropic-messages"
    # the Chat Completions spelling of an image stays Chat Completions
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}, {"type": "text", "text": "Explain"}]}]}
    assert _record(tmp_path, chat, "api-chat")["api"] == "openai-chat"


def test_a_messages_field_that_is_no_list_is_named_as_such(tmp_path, trace_home):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": "hello"}))
    run = cli("anatomy", "record", str(path), "--session", "odd")
    assert run.code == 1 and len(run.err.strip().splitlines()) == 1
    assert "`messages` is a JSON string, not a list" in run.err and "nothing was recorded" in run.err
    assert not (trace_home / "anatomy").exists() or not any((trace_home / "anatomy").iterdir())


def test_input_cut_short_fails_the_one_pass_record_without_a_promise_to_read_it_later(tmp_path, trace_home):
    whole = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "first"}]})
    for name, text in (("doc.json", '{"model": "gpt-4o", "messages": [{"role": "user"'),
                       ("calls.jsonl", whole + "\n" + whole[:30])):
        path = tmp_path / name
        path.write_text(text)
        run = cli("anatomy", "record", str(path), "--session", "cut")
        assert run.code == 1 and len(run.err.strip().splitlines()) == 1
        assert "cut short" in run.err and "will be read" not in run.err and "nothing was recorded" in run.err
    assert not (trace_home / "anatomy").exists() or not any((trace_home / "anatomy").iterdir())


def test_responses_calls_that_continue_a_stored_response_are_no_compaction(tmp_path):
    """With previous_response_id the body sends only the new input; the
    earlier turns live on the server. That is a conversation going on,
    not a history rewritten."""
    calls = [{"model": "gpt-4.1", "input": "Plan a vegetable garden",
              "response": {"id": "resp_a", "object": "response", "output": [], "usage": {"input_tokens": 12, "output_tokens": 30}}},
             {"model": "gpt-4.1", "previous_response_id": "resp_a", "input": "Add tomatoes",
              "response": {"id": "resp_b", "object": "response", "output": [], "usage": {"input_tokens": 55, "output_tokens": 20}}},
             {"model": "gpt-4.1", "conversation": {"id": "conv_7"}, "input": [{"role": "user", "content": "And basil"}]}]
    path = tmp_path / "chained.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    run = cli("anatomy", "record", str(path), "--session", "chain", "--json")
    assert run.code == 0, run.err
    records = run.lines()
    assert [r["compactionCycle"] for r in records] == [0, 0, 0]
    assert [r.get("chainedTo") for r in records] == [None, "resp_a", "conv_7"]
    assert records[1]["contextTokens"] == 55                      # the saved usage covers the whole context
    # a client that then drops the chain and resends a shorter history did rewrite it
    restart = {"model": "gpt-4.1", "input": [{"role": "user", "content": "Start over: herbs only"}]}
    path.write_text(json.dumps(restart) + "\n")
    assert cli("anatomy", "record", str(path), "--session", "chain", "--json").lines()[0]["compactionCycle"] == 1
