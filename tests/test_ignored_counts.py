"""Every reader counts what it reads and makes no event of by design in the
ingest result's `ignored`: one rule for all formats -- a record (a line; in a
document, its message or part) read without error that gave no event of its
own. Bookkeeping, a repeat of what is already kept, and the UI's copies of
text the model's records hold are such records; events are unchanged."""
from __future__ import annotations

import json

from tests.helpers import cli

TS = "2026-09-03T10:00:0{}.000Z"


def _ingest(tmp_path, name: str, records: list, *, lines: bool = True, store: str = "s") -> dict:
    src = tmp_path / name
    src.write_text("".join(json.dumps(r) + "\n" for r in records) if lines else json.dumps(records[0]))
    out = cli("--store", str(tmp_path / store), "ingest", str(src))
    (result,) = out.lines()
    assert out.code == 0 and result["errors"] == 0, result
    return result


def _codex(kind: str, payload: dict, second: int) -> dict:
    return {"timestamp": TS.format(second), "type": kind, "payload": payload}


CODEX = [
    _codex("session_meta", {"id": "019c0000-aaaa-7bbb-8ccc-000000000001", "cwd": "/home/dev/app",
                            "originator": "codex_cli_rs", "cli_version": "0.60.0"}, 0),
    _codex("turn_context", {"cwd": "/home/dev/app", "model": "gpt-5-codex"}, 1),                # settings
    _codex("response_item", {"type": "message", "role": "user",
                             "content": [{"type": "input_text", "text": "Which port does it listen on?"}]}, 2),
    _codex("event_msg", {"type": "user_message", "message": "Which port does it listen on?", "images": []}, 2),
    _codex("event_msg", {"type": "token_count", "info": {"total_token_usage": {"total_tokens": 812}}}, 3),
    _codex("response_item", {"type": "message", "role": "assistant",
                             "content": [{"type": "output_text", "text": "Port 8443."}]}, 4),
    _codex("event_msg", {"type": "agent_message", "message": "Port 8443."}, 4),
]


def test_codex_counts_settings_usage_and_the_ui_streams_copies(tmp_path):
    got = _ingest(tmp_path, "rollout.jsonl", CODEX)
    assert (got["format"], got["added"], got["ignored"]) == ("codex", 3, 4)


def test_a_grown_file_read_again_counts_as_a_fresh_read_of_it_and_adds_only_the_new(tmp_path):
    first = _ingest(tmp_path, "rollout.jsonl", CODEX[:4])
    grown = _ingest(tmp_path, "rollout.jsonl", CODEX)
    again = cli("--store", str(tmp_path / "s"), "ingest", "--recheck", str(tmp_path / "rollout.jsonl")).lines()[0]
    fresh = _ingest(tmp_path, "rollout.jsonl", CODEX, store="fresh")
    assert (first["added"], first["ignored"]) == (2, 2)
    assert (grown["added"], grown["ignored"]) == (1, fresh["ignored"]) == (1, 4)
    assert (again["added"], again["skipped"], again["ignored"]) == (0, 3, 4)


OPENCODE = {"info": {"id": "ses_9c1ignored", "title": "ports", "time": {"created": 1783579200000}},
            "messages": [
                {"info": {"id": "msg_u", "role": "user", "time": {"created": 1783579201000}},
                 "parts": [{"id": "prt_1", "type": "text", "text": "Which port?"}]},
                {"info": {"id": "msg_a", "role": "assistant", "time": {"created": 1783579202000}},
                 "parts": [{"id": "prt_2", "type": "step-start"},
                           {"id": "prt_3", "type": "text", "text": "Port 8443."},
                           {"id": "prt_4", "type": "step-finish", "tokens": {"input": 10, "output": 3}}]}]}


def test_opencode_export_counts_its_step_parts(tmp_path):
    got = _ingest(tmp_path, "ses.json", [OPENCODE], lines=False)
    assert (got["format"], got["added"], got["ignored"]) == ("opencode", 3, 2)


GEMINI_ANSWER = {"id": "m2", "timestamp": TS.format(2), "type": "gemini", "content": "Port 8443.", "model": "gemini-2.5-pro"}
GEMINI = [
    {"sessionId": "5b1e0c2a-1111-4222-8333-944445555666", "projectHash": "ab" * 32,
     "startTime": TS.format(0), "lastUpdated": TS.format(0)},
    {"id": "m1", "timestamp": TS.format(1), "type": "user", "content": [{"text": "Which port?"}]},
    {"$set": {"lastUpdated": TS.format(1)}},
    GEMINI_ANSWER,
    dict(GEMINI_ANSWER),                                              # written again unchanged
    {"$set": {"lastUpdated": TS.format(3)}},
]


def test_gemini_counts_metadata_last_updated_and_a_message_written_again(tmp_path):
    got = _ingest(tmp_path, "session-2026-09-03T10-00-5b1e0c2a.jsonl", GEMINI)
    assert (got["format"], got["added"], got["ignored"]) == ("gemini-cli", 2, 4)


OPENAI_CALL = {"model": "gpt-5", "messages": [{"role": "system", "content": "Answer briefly."},
                            {"role": "user", "content": "Which port?"},
                            {"role": "assistant", "content": "Port 8443."}]}


def test_openai_counts_a_request_body_whose_history_was_read_already(tmp_path):
    got = _ingest(tmp_path, "chat.jsonl", [OPENAI_CALL, OPENAI_CALL])
    assert (got["format"], got["added"], got["ignored"]) == ("openai", 3, 1)


ANTHROPIC_CALL = {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": "Answer briefly.",
                  "messages": [{"role": "user", "content": "Which port?"},
                               {"role": "assistant", "content": [{"type": "text", "text": "Port 8443."}]}]}


def test_anthropic_counts_a_request_body_whose_history_was_read_already(tmp_path):
    got = _ingest(tmp_path, "calls.jsonl", [ANTHROPIC_CALL, ANTHROPIC_CALL])
    assert (got["format"], got["added"], got["ignored"]) == ("anthropic", 3, 1)
