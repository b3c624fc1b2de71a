"""Claude Code logs: every call and result kept and paired, user text
verbatim, streamed messages merged, summaries and compactions as system."""
from __future__ import annotations

import orjson
import pytest

from reducers.drafts import merge_adjacent
from reducers.formats import claude_code
from tests.formats.real_files import parse_file, records


def _real(shared_transcripts):
    return sorted((shared_transcripts / "claude_code").glob("*.jsonl"))


def _source_blocks(path):
    uses, results, user_texts = set(), 0, []
    for _, rec in records(path):
        if not isinstance(rec, dict):
            continue
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = msg.get("content")
        if rec.get("type") == "user" and isinstance(content, str) and not rec.get("isMeta") \
                and not rec.get("isCompactSummary"):
            user_texts.append(content)
        for b in content if isinstance(content, list) else ():
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id"):
                uses.add(b["id"])
            if isinstance(b, dict) and b.get("type") == "tool_result":
                results += 1
    return uses, results, user_texts


def test_every_real_transcript_keeps_calls_results_and_user_text(shared_transcripts):
    checked = 0
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(claude_code, path)
        uses, results, user_texts = _source_blocks(path)
        calls = {d.tool["call_id"] for d in drafts if d.kind == "tool_call"}
        got_results = [d for d in drafts if d.kind == "tool_result"]
        assert uses <= calls, path.name
        assert len(got_results) >= results, path.name
        for r in got_results:
            if r.tool["call_id"] in uses:
                assert r.tool["call_id"] in calls and r.tool["name"], path.name
        users = [d.text for d in drafts if d.kind == "user"]
        for text in user_texts:
            assert text in users, (path.name, text[:60])
        keys = [k for d in drafts for k in d.all_keys()]
        assert len(keys) == len(set(keys)), path.name
        checked += 1
    assert checked >= 15


def test_parsing_is_deterministic(shared_transcripts):
    path = shared_transcripts / "claude_code" / "ccviewer_fe5e1c67.jsonl"
    assert parse_file(claude_code, path)[0] == parse_file(claude_code, path)[0]


def test_a_streamed_message_merges_into_one_event_per_text_run(shared_transcripts):
    path = shared_transcripts / "claude_code" / "agtrace_claude_session.jsonl"
    drafts, _ = parse_file(claude_code, path)
    merged = merge_adjacent(drafts)
    groups = [d.merge_group for d in merged if d.kind == "assistant"]
    # thinking + text of one message.id become one event: no two adjacent events share a group
    assert all(a != b for a, b in zip(groups, groups[1:]))
    thinking = [d for d in merged if d.kind == "assistant" and "<thinking>" in d.text]
    assert thinking and all("\n\n" in d.text or d.text.startswith("<thinking>") for d in thinking)


def test_summaries_compactions_and_injected_lines_are_system_not_user(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agentsessions_claude_small.jsonl")
    subtypes = {(d.meta or {}).get("subtype") for d in drafts if d.kind == "system"}
    assert {"summary", "compact_boundary", "compact_summary"} <= subtypes
    assert not any(d.kind == "user" and d.text == "Summary of prior context." for d in drafts)


def test_sidechains_are_flagged(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agtrace_claude_agent_sidechain.jsonl")
    assert drafts and all(d.meta and d.meta.get("sidechain") and d.meta.get("agent_id") for d in drafts)


def test_junk_lines_are_bad_records_with_their_line_numbers(shared_transcripts):
    drafts, bad = parse_file(claude_code, shared_transcripts / "claude_code" / "ccl_edge_cases.jsonl")
    assert [b.line for b in bad] == [13, 14, 15, 16]
    assert len(drafts) > 10


def test_a_leading_summary_belongs_to_the_files_session(samples):
    drafts, _ = parse_file(claude_code, samples / "claude-code" / "demo-session.jsonl")
    assert {d.session_id for d in drafts} == {"5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"}


def test_sample_session_counts(samples):
    drafts, bad = parse_file(claude_code, samples / "claude-code" / "demo-session.jsonl")
    merged = merge_adjacent(drafts)
    kinds = [d.kind for d in merged]
    assert not bad
    assert kinds.count("tool_call") == kinds.count("tool_result") == 3
    assert kinds.count("user") == 2 and kinds.count("system") == 1
    first = next(d for d in merged if d.kind == "assistant")
    assert first.text.startswith("<thinking>") and "payments configuration" in first.text
    turns = {d.turn_id for d in merged}
    assert len(turns) == 2


def test_session_override_wins(samples):
    drafts, _ = parse_file(claude_code, samples / "claude-code" / "demo-session.jsonl", session="mine")
    assert {d.session_id for d in drafts} == {"mine"} and all(d.key.startswith("cc/mine/") for d in drafts)


@pytest.mark.parametrize("folder", ["codex", "openai_chat", "anthropic_messages"])
def test_sniff_claims_only_claude_code(shared_transcripts, folder):
    for path in sorted((shared_transcripts / "claude_code").glob("*.jsonl")):
        assert claude_code.sniff([r for _, r in records(path)[:20]]), path.name
    for path in sorted((shared_transcripts / folder).glob("*.json*")):
        samples = [r for _, r in records(path)[:20]] if path.suffix == ".jsonl" else [orjson.loads(path.read_bytes())]
        assert not claude_code.sniff(samples), path.name
