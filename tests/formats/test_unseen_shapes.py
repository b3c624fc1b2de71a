"""Record shapes from transcript versions the shared samples do not hold
(found in the formats' own documentation and in other projects' fixtures,
rewritten here by hand): each must be read into the right events, or
reported, never dropped without a word."""
from __future__ import annotations

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, claude_code


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
