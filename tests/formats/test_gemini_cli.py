"""Gemini CLI session files (chat recording JSONL, and the older whole
.json): messages written again as they change are read once, tool calls
pair with their results, thoughts are kept as thinking, a rewind and a
summary are events, and a grown file adds only what is new."""
from __future__ import annotations

import json
from pathlib import Path

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import gemini_cli
from reducers.formats.registry import detect_format
from tests.helpers import cli, transcript_events

SAMPLE = Path(__file__).resolve().parents[2] / "sample_sessions" / "gemini-cli" / \
    "session-2026-06-14T08-02-7d3e9a41.jsonl"
SID = "7d3e9a41-2c58-4b6f-9e12-5a8c0f3d7b64"


def parse(records, session=None):
    src = "/home/u/.gemini/tmp/p/chats/session-x.jsonl"
    out = list(gemini_cli.parse(list(enumerate(records, 1)), ParseContext(path=src, source_id=src, session=session)))
    return [d for d in out if isinstance(d, Draft)], [b for b in out if isinstance(b, BadRecord)]


def _records():
    return [json.loads(l) for l in SAMPLE.read_text().splitlines()]


def test_the_sample_is_detected_and_read_whole():
    records = _records()
    assert detect_format(records[:20]) == "gemini-cli"
    drafts, bad = parse(records)
    assert not bad
    kinds = [d.kind for d in drafts]
    assert kinds == ["user", "assistant", "assistant", "tool_call", "tool_result", "tool_call", "tool_result",
                     "assistant", "system", "user", "system", "user", "system"]
    assert {d.session_id for d in drafts} == {SID}
    assert len({d.key for d in drafts}) == len(drafts)


def test_a_message_written_again_adds_only_what_it_gained():
    drafts, _ = parse(_records())
    calls = [d for d in drafts if d.kind == "tool_call"]
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [c.tool["call_id"] for c in calls] == [r.tool["call_id"] for r in results]
    assert results[0].tool == {"name": "run_shell_command", "call_id": "run_shell_command-1781424155901-3f2a",
                               "is_error": False}
    assert "--bucket s3://acme-archive-eu --retain 14" in results[0].text
    assert sum(1 for d in drafts if d.text == "Let me look at the cron entry first.") == 1


def test_thoughts_rewinds_and_summaries_are_kept():
    drafts, _ = parse(_records())
    thought = next(d for d in drafts if (d.meta or {}).get("thinking"))
    assert thought.text.startswith("Locating the job: ")
    rewind = next(d for d in drafts if (d.meta or {}).get("subtype") == "rewind")
    assert rewind.meta["rewind_to"] == "2d4f6b8a-0c1e-4a3b-9d5f-7e9a1c3b5d02"
    assert drafts[-1].text == "Fix the nightly archive backup cron entry (missing BUCKET_URL)"
    assert not any("lastUpdated" in d.text for d in drafts)       # bookkeeping updates are not events


def test_the_legacy_whole_document_json_reads_like_the_jsonl():
    records = _records()
    legacy = {**records[0], "messages": [r for r in records if "type" in r]}
    jsonl, _ = parse(records)
    whole, bad = parse([legacy])
    assert not bad
    messages = [d.key for d in jsonl if (d.meta or {}).get("subtype") not in ("rewind", "summary")]
    assert [d.key for d in whole] == messages


def test_a_failed_tool_and_a_bare_function_response_are_results():
    meta = {"sessionId": "s", "projectHash": "p"}
    call = {"id": "c1", "name": "write_file", "args": {"file_path": "/x"}, "status": "error",
            "result": [{"functionResponse": {"id": "c1", "name": "write_file", "response": {"error": "EACCES: /x"}}}]}
    drafts, _ = parse([meta, {"id": "m1", "timestamp": "2026-06-14T08:00:00Z", "type": "gemini", "content": "",
                              "toolCalls": [call]},
                       {"id": "m2", "timestamp": "2026-06-14T08:00:01Z", "type": "user", "content": [
                           {"functionResponse": {"id": "c9", "name": "glob", "response": {"output": "a.py"}}}]}])
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [(r.tool["call_id"], r.tool["is_error"], r.text) for r in results] == [
        ("c1", True, "EACCES: /x"), ("c9", False, "a.py")]


def test_messages_without_ids_or_written_in_the_gemini_apis_terms_are_read_not_refused():
    # other writers of these files: no message ids, the model's turn typed
    # `model`, its text as `parts`; each message is named by its position
    doc = {"sessionId": "s", "projectHash": "p", "startTime": "2024-01-01T12:00:00Z", "messages": [
        {"type": "user", "content": "Gemini hello", "timestamp": "2024-01-01T12:00:00Z"},
        {"type": "model", "content": "Hello from Gemini!", "timestamp": "2024-01-01T12:01:00Z"},
        {"id": "m3", "type": "model", "parts": [{"text": "Captured multiline output."}]},
        {"id": "m4", "type": "verdict", "content": "not a message type"}]}
    drafts, bad = parse([doc])
    assert [(d.kind, d.text) for d in drafts] == [("user", "Gemini hello"), ("assistant", "Hello from Gemini!"),
                                                  ("assistant", "Captured multiline output.")]
    assert len({d.key for d in drafts}) == 3
    assert [(b.line, b.reason) for b in bad] == [
        (1, "a message without a type (user, gemini, info, error, warning) or content")]
    again, _ = parse([doc])
    assert [d.key for d in again] == [d.key for d in drafts]        # the same keys: re-reading adds nothing


def test_a_record_of_another_shape_is_a_bad_record_and_the_rest_reads_on():
    drafts, bad = parse([{"sessionId": "s", "projectHash": "p"}, {"what": 1},
                         {"id": "m1", "timestamp": "2026-06-14T08:00:00Z", "type": "user", "content": "hi"}])
    assert [b.line for b in bad] == [2] and [d.text for d in drafts] == ["hi"]


def test_a_grown_session_file_adds_only_its_new_events(tmp_path):
    lines = SAMPLE.read_text().splitlines(keepends=True)
    path = tmp_path / "session-grow.jsonl"
    path.write_text("".join(lines[:5]))
    first = cli("--store", str(tmp_path / "s"), "ingest", "--no-embed", str(path)).lines()[0]
    path.write_text("".join(lines))
    second = cli("--store", str(tmp_path / "s"), "ingest", "--no-embed", str(path)).lines()[0]
    one_shot = cli("--store", str(tmp_path / "o"), "ingest", "--no-embed", str(SAMPLE)).lines()[0]
    assert first["format"] == second["format"] == "gemini-cli"
    assert first["added"] + second["added"] == one_shot["added"] == len(transcript_events(tmp_path / "s"))
