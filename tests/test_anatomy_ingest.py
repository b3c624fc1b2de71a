"""Anatomy records `trace ingest` writes: from Claude Code and Codex
transcripts (their own usage figures and compactions) and from logged API
calls. Expected values are read from the transcripts by this file."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stores.anatomy.log import AnatomyLog
from stores.store import Store
from tests.helpers import cli

# windows this test knows, for the models the shared transcripts name
WINDOWS = {"claude-sonnet-4-5-20250929": 200_000, "claude-sonnet-4-20250514": 200_000,
           "claude-3-sonnet-20240229": 200_000, "claude-sonnet-4": 200_000}


def _lines(path: Path) -> list[tuple[int, dict]]:
    out = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        try:
            d = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(d, dict):
            out.append((n, d))
    return out


def claude_code_calls(path: Path) -> dict[str, list[dict]]:
    """{session: [{id, tokens, model}]} in file order, one per message id,
    the usage of the message's last line."""
    calls: dict[tuple[str, str], dict] = {}
    for _, d in _lines(path):
        msg = d.get("message")
        if d.get("type") != "assistant" or not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            continue
        if msg.get("model") == "<synthetic>" or not isinstance(d.get("sessionId"), str) or not msg.get("id"):
            continue
        u = msg["usage"]
        tokens = u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0)
        key = (d["sessionId"], msg["id"])
        if key in calls:
            calls[key]["tokens"] = tokens
        else:
            calls[key] = {"id": msg["id"], "tokens": tokens, "model": msg.get("model"),
                          "sidechain": d.get("isSidechain") is True}
    out: dict[str, list[dict]] = {}
    for (session, _), call in calls.items():
        out.setdefault(session, []).append(call)
    return out


def codex_calls(path: Path) -> tuple[str, list[dict]]:
    session, calls, last_total = None, [], object()
    for _, d in _lines(path):
        p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
        if d.get("type") == "session_meta" and session is None:
            session = p.get("id")
        if d.get("type") == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            info = p["info"]
            if info.get("total_token_usage") == last_total:
                continue
            last_total = info.get("total_token_usage")
            calls.append({"tokens": info["last_token_usage"]["input_tokens"], "window": info["model_context_window"]})
    return session, calls


def _ingest(tmp_path: Path, path: Path) -> Store:
    store = Store(tmp_path / "store")
    results = list(store.ingest([str(path)], embed=False))
    assert all(r.error is None for r in results), results      # (edge-case fixtures hold bad lines on purpose)
    return store


def _replay(store: Store, session: str) -> list[dict]:
    run = cli("--store", str(store.dir), "anatomy", "replay", "--session", session)
    assert run.code == 0, run.err
    return run.lines()


def _pct(tokens: int, window: int | None):
    return round(100 * tokens / window, 2) if window else None


@pytest.mark.shared
def test_claude_code_utilisation_follows_the_transcripts_usage(shared_transcripts, tmp_path):
    checked = 0
    for path in sorted((shared_transcripts / "claude_code").glob("*.jsonl")):
        expected = claude_code_calls(path)
        if not expected:
            continue
        store = _ingest(tmp_path / path.stem, path)
        for session, calls in expected.items():
            records = {r["key"]: r for r in AnatomyLog(store.dir).read(session)}
            for call in calls:
                rec = records[f"cc/{session}/{call['id']}"]
                assert rec["contextTokens"] == call["tokens"], (path.name, call["id"])
                assert rec["contextUtilPct"] == _pct(call["tokens"], WINDOWS.get(call["model"])), (path.name, call)
                checked += 1
            # the timeline, in call order, is the transcript's own sequence of figures
            main = [c["tokens"] for c in calls if not c["sidechain"]]
            shown = [r["contextTokens"] for r in _replay(store, session) if r["thread"] == "main"]
            assert shown == main, path.name
    assert checked >= 250


@pytest.mark.shared
def test_codex_utilisation_follows_the_rollouts_token_counts(shared_transcripts, tmp_path):
    checked = 0
    for path in sorted((shared_transcripts / "codex").glob("*.jsonl")):
        session, calls = codex_calls(path)
        if not calls:
            continue
        store = _ingest(tmp_path / path.stem, path)
        rows = _replay(store, session)
        assert [r["contextTokens"] for r in rows] == [c["tokens"] for c in calls], path.name
        for row, call in zip(rows, calls):
            if call["window"] > 0:                     # (a fixture's zeroed report names no window)
                assert row["window"] == call["window"]
                assert row["contextUtilPct"] == _pct(call["tokens"], call["window"])
                checked += 1
    assert checked >= 240


@pytest.mark.shared
def test_compactions_the_transcripts_record_start_cycles(shared_transcripts, tmp_path):
    path = shared_transcripts / "claude_code" / "agentsessions_claude_small.jsonl"
    boundaries: dict[str, list[int]] = {}
    call_lines: dict[str, list[tuple[int, str]]] = {}
    seen = set()
    for n, d in _lines(path):
        if d.get("subtype") == "compact_boundary" and isinstance(d.get("sessionId"), str):
            boundaries.setdefault(d["sessionId"], []).append(n)
        msg = d.get("message")
        if d.get("type") == "assistant" and isinstance(msg, dict) and isinstance(msg.get("usage"), dict) \
                and msg.get("model") != "<synthetic>" and msg.get("id") not in seen and isinstance(d.get("sessionId"), str):
            seen.add(msg.get("id"))
            call_lines.setdefault(d["sessionId"], []).append((n, msg["id"]))
    store = _ingest(tmp_path, path)
    found = 0
    for session, calls in call_lines.items():
        records = {r["key"]: r for r in AnatomyLog(store.dir).read(session)}
        for line, mid in calls:
            want = sum(1 for b in boundaries.get(session, ()) if b < line)
            assert records[f"cc/{session}/{mid}"]["compactionCycle"] == want
            found += want
    assert found > 0                      # the fixture does compact before a call


@pytest.mark.shared
def test_re_ingest_adds_no_record_twice(shared_transcripts, tmp_path):
    path = tmp_path / "rollout.jsonl"
    path.write_bytes((shared_transcripts / "codex" / "agentcmd_rollout_2025-09-25T15-12-14_019982b8.jsonl").read_bytes())
    store = _ingest(tmp_path, path)
    files = sorted((store.dir / "anatomy").iterdir())
    before = [f.read_bytes() for f in files]
    os.utime(path, ns=(1, 1))                          # changed as far as the fingerprint knows: parsed again
    [res] = list(store.ingest([str(path)], embed=False))
    assert res.added == 0 and res.anatomy == 0 and not res.unchanged
    assert [f.read_bytes() for f in files] == before


@pytest.mark.shared
def test_a_turn_of_a_real_session_lists_the_events_before_the_call(shared_transcripts, tmp_path):
    path = shared_transcripts / "claude_code" / "agentcmd_full-session-four.jsonl"
    store = _ingest(tmp_path, path)
    session = next(iter(claude_code_calls(path)))
    rows = _replay(store, session)
    run = cli("--store", str(store.dir), "anatomy", "replay", "--session", session, "--turn", "5")
    shown = json.loads(run.out)
    events = shown["events"]
    # everything the session logged before the call's own message, nothing after it
    line = shown["record"]["source"]["line"]
    log = [json.loads(x) for x in cli("--store", str(store.dir), "export", "--session", session).out.splitlines()]
    # (the working state TRACE derives at ingest has no source line: it comes after the file's events)
    before = [e["seq"] for e in log if (e["source"].get("line") or line) < line
              and not (e.get("meta") or {}).get("sidechain")]
    assert [e["seq"] for e in events] == before
    assert shown["record"]["historyEventCount"] == len(events) == rows[4]["historyEventCount"]


def test_a_growing_claude_code_transcript_gains_records_for_new_calls_only(tmp_path, samples):
    src = (samples / "claude-code" / "demo-session.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(src[:len(src) // 2]))
    store = Store(tmp_path / "store")
    [first] = list(store.ingest([str(path)], embed=False))
    path.write_text("".join(src))
    [second] = list(store.ingest([str(path)], embed=False))
    [full] = list(Store(tmp_path / "other").ingest([str(samples / "claude-code" / "demo-session.jsonl")], embed=False))
    assert first.anatomy > 0 and second.anatomy > 0
    assert first.anatomy + second.anatomy == full.anatomy
    session = first.session_id
    keys = [r["key"] for r in AnatomyLog(store.dir).read(session)]
    assert len(keys) == len(set(keys)) == full.anatomy


def test_logged_calls_write_records_whose_context_is_the_conversation_before_the_reply(tmp_path):
    history = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "List the deploy steps"}]
    reply1 = {"role": "assistant", "content": "Build, test, ship."}
    calls = [{"request": {"model": "gpt-4o", "messages": history},
              "response": {"choices": [{"message": reply1}], "usage": {"prompt_tokens": 21, "completion_tokens": 6}}},
             {"request": {"model": "gpt-4o", "messages": history + [reply1, {"role": "user", "content": "Expand step 2"}]},
              "response": {"choices": [{"message": {"role": "assistant", "content": "Run the suite."}}],
                           "usage": {"prompt_tokens": 40, "completion_tokens": 4}}}]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    store = Store(tmp_path / "store")
    [res] = list(store.ingest([str(path)], embed=False))
    assert res.anatomy == 2
    rows = _replay(store, res.session_id)
    assert [r["contextTokens"] for r in rows] == [21, 40]
    assert [r["contextUtilPct"] for r in rows] == [_pct(21, 128_000), _pct(40, 128_000)]
    turn = json.loads(cli("--store", str(store.dir), "anatomy", "replay", "--session", res.session_id,
                          "--turn", "2").out)
    texts = [e["snippet"] for e in turn["events"]]
    assert texts == ["You are terse.", "List the deploy steps", "Build, test, ship.", "Expand step 2"]
    assert turn["record"]["messageCount"] == 4 and turn["record"]["origin"] == "ingest"


def test_captured_api_traffic_writes_a_record_per_model_call(tmp_path):
    system = [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": "Bash", "description": "run a command", "input_schema": {"type": "object"}}]
    url = "https://api.anthropic.com/v1/messages"

    def exchange(messages, response):
        return {"request": {"url": url, "method": "POST", "headers": {},
                            "body": {"model": "claude-sonnet-4-5-20250929", "system": system, "tools": tools,
                                     "messages": messages}}, "response": response}

    first_user = {"role": "user", "content": [{"type": "text", "text": "List the files"}]}
    reply = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
             "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
             "usage": {"input_tokens": 9, "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 0,
                       "output_tokens": 20}}
    events = [{"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
                                                    "model": "claude-sonnet-4-5-20250929", "content": [],
                                                    "usage": {"input_tokens": 5, "cache_creation_input_tokens": 40,
                                                              "cache_read_input_tokens": 1209, "output_tokens": 1}}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Two files."}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}]
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py b.py"}]}
    lines = [exchange([first_user], {"status": 200, "headers": {}, "body": reply}),
             {"request": {"url": "https://statsig.anthropic.com/v1/rgstr", "method": "POST", "body": {"e": 1}},
              "response": {"status": 202}},
             exchange([first_user, {"role": "assistant", "content": reply["content"]}, result],
                      {"status": 200, "headers": {}, "body": None, "body_raw": raw})]
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = Store(tmp_path / "store")
    [res] = list(store.ingest([str(path)], embed=False))
    assert res.anatomy == 2, res
    rows = _replay(store, res.session_id)
    assert [r["contextTokens"] for r in rows] == [1209, 1254]            # each call's own usage, cache included
    records = AnatomyLog(store.dir).read(res.session_id)
    assert {r["toolSchemaBytes"] for r in records} == {_utf8_compact(tools)}
    assert {r["systemPromptBytes"] for r in records} == {len("You are a coding agent.")}
    turn = json.loads(cli("--store", str(store.dir), "anatomy", "replay", "--session", res.session_id,
                          "--turn", "2").out)
    assert [e["kind"] for e in turn["events"]] == ["system", "user", "tool_call", "tool_result"]


def _utf8_compact(value) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_a_records_time_is_utc_iso_like_the_events_whatever_the_transcript_wrote(tmp_path, samples):
    lines = [json.loads(l) for l in (samples / "claude-code" / "demo-session.jsonl").read_text().splitlines()]
    offsets = iter(["2026-03-02T11:14:07.5+02:00", "not a time", "2026-03-02 09:14:15Z"])
    for d in lines:
        if d.get("type") == "assistant" and isinstance((d.get("message") or {}).get("usage"), dict):
            d["timestamp"] = next(offsets, d["timestamp"])
    path = tmp_path / "zones.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    store = Store(tmp_path / "store")
    [done] = list(store.ingest([str(path)], embed=False))
    times = [r["ts"] for r in AnatomyLog(store.dir).read(done.session_id)]
    assert times[0] == "2026-03-02T09:14:07.500Z" and "2026-03-02T09:14:15.000Z" in times
    assert all(t is None or (len(t) == 24 and t.endswith("Z")) for t in times)        # never "not a time"
