"""Record shapes from transcript versions the shared samples do not hold
(found in the formats' own documentation and in other projects' fixtures,
rewritten here by hand): each must be read into the right events, or
reported, never dropped without a word."""
from __future__ import annotations

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic


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
