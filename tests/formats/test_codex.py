"""Codex rollouts: every call and output kept and paired by call_id, the text
that arrives twice (response_item and event_msg) stored once and verbatim,
harness text as system, one session per file."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import orjson
import pytest

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import codex
from reducers.formats.common import to_utc_iso
from tests.formats.real_files import parse_file, records

SID = "0199c0de-0000-7000-8000-00000000c0de"
CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call",
              "image_generation_call", "tool_call")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "tool_search_output", "tool_result")
UI_TOOL_EVENTS = ("mcp_tool_call_end", "web_search_end", "exec_command_end", "patch_apply_end", "image_generation_end")


def _real(shared_transcripts):
    paths = sorted((shared_transcripts / "codex").glob("*.jsonl"))
    assert len(paths) >= 8
    return paths


def _parse(lines: list, session: str | None = None, source_id: str = "/home/u/.codex/sessions/rollout-x.jsonl"):
    items = list(codex.parse(list(enumerate(lines, 1)), ParseContext(path=source_id, source_id=source_id,
                                                                      session=session)))
    return [d for d in items if isinstance(d, Draft)], [b for b in items if isinstance(b, BadRecord)]


def _rec(rtype: str, payload: dict, ts: str = "2026-03-01T09:00:00.000Z") -> dict:
    return {"timestamp": ts, "type": rtype, "payload": payload}


def _meta(sid: str = SID, **extra) -> dict:
    """A session_meta naming the session and nothing else (its setting has
    tests of its own): the events that follow are the rollout's."""
    return _rec("session_meta", {"id": sid, **extra})


def _item(**payload) -> dict:
    return _rec("response_item", payload)


def _event(**payload) -> dict:
    return _rec("event_msg", payload)


def _user_item(*parts: str) -> dict:
    return _item(type="message", role="user", content=[{"type": "input_text", "text": t} for t in parts])


def _assistant_item(*parts: str) -> dict:
    return _item(type="message", role="assistant", content=[{"type": "output_text", "text": t} for t in parts])


def _call(call_id: str, cmd: str) -> dict:
    return _item(type="function_call", name="shell", call_id=call_id,
                 arguments=orjson.dumps({"command": ["bash", "-lc", cmd]}).decode())


def _output(call_id: str, output) -> dict:
    return _item(type="function_call_output", call_id=call_id, output=output)


def _kinds(drafts) -> list[str]:
    return [d.kind for d in drafts]


def _body(d: Draft) -> str:
    return d.text.removeprefix("<thinking>\n").removesuffix("\n</thinking>")


# ---------------------------------------------------------------- the real transcripts

@dataclass
class _Census:
    """What a rollout holds, counted straight from its records (not by the parser)."""
    session: str | None = None
    call_ids: list = field(default_factory=list)       # every call, in order (response items, UI-only runs)
    results: int = 0
    user_events: list = field(default_factory=list)
    user_items: list = field(default_factory=list)
    env_items: int = 0
    agent_events: list = field(default_factory=list)
    agent_parts: list = field(default_factory=list)
    reasoning_events: list = field(default_factory=list)
    reasoning_parts: list = field(default_factory=list)
    # the third copy paginated rollouts write: event_msg item_completed items
    user_completed: list = field(default_factory=list)
    agent_completed: list = field(default_factory=list)
    reasoning_completed: list = field(default_factory=list)


def _census(path) -> _Census:
    c = _Census()
    searched: set = set()
    for line, rec in records(path):
        p = rec.get("payload") or {}
        rtype, ptype = rec.get("type"), p.get("type")
        if rtype == "session_meta" and c.session is None:
            c.session = p.get("id")
        if rtype == "response_item" and ptype in CALL_ITEMS:
            c.call_ids.append(p.get("call_id") or p.get("id") or f"codex-L{line}")     # id-less: named by its line
            c.results += ptype == "image_generation_call"      # the item carries its own result
        if rtype == "response_item" and ptype in OUTPUT_ITEMS:
            c.results += 1
        # a tool run only the UI stream reports: no call with its id came before it
        if rtype == "event_msg" and ptype in UI_TOOL_EVENTS and p.get("source") not in ("user_shell", "user"):
            if p.get("call_id") not in c.call_ids:
                c.call_ids.append(p.get("call_id"))
                c.results += 1
                searched.add(p.get("call_id"))
            elif ptype == "web_search_end" and p.get("results") and p["call_id"] not in searched:
                searched.add(p["call_id"])
                c.results += 1                                  # search results only the event holds
        if rtype == "response_item" and ptype == "message":
            texts = [b["text"] for b in p["content"] if b.get("type") in ("input_text", "output_text")]
            if p["role"] == "user" and texts and texts[0].startswith("<environment_context>"):
                c.env_items += 1
            elif p["role"] == "user":
                c.user_items.append("".join(texts))
            elif p["role"] == "assistant":
                c.agent_parts.extend(texts)
        if rtype == "response_item" and ptype == "reasoning":
            c.reasoning_parts.extend(s["text"] for s in p.get("summary") or ())
        if rtype == "event_msg" and ptype == "user_message":
            c.user_events.append(p["message"])
        if rtype == "event_msg" and ptype == "agent_message":
            c.agent_events.append(p["message"])
        if rtype == "event_msg" and ptype == "agent_reasoning":
            c.reasoning_events.append(p["text"])
        item = p.get("item") if rtype == "event_msg" and ptype == "item_completed" else None
        if isinstance(item, dict):
            texts = [b["text"] for b in item.get("content") or () if b.get("type") in ("text", "Text")]
            if item.get("type") == "UserMessage":
                c.user_completed.append("".join(texts))
            elif item.get("type") == "AgentMessage":
                c.agent_completed.extend(texts)
            elif item.get("type") == "Reasoning":
                c.reasoning_completed.extend(t for k in ("summary_text", "raw_content") for t in item.get(k) or ())
    return c


def _once(*streams: list) -> Counter:
    """Each text as many times as the fullest of the streams holds it."""
    counts = [Counter(s) for s in streams]
    return Counter({t: max(c[t] for c in counts) for t in set().union(*counts)})


def test_every_call_item_is_one_tool_call_and_every_output_one_tool_result(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(codex, path)
        census = _census(path)
        calls = [d for d in drafts if d.kind == "tool_call"]
        assert [d.tool["call_id"] for d in calls] == census.call_ids, path.name
        assert sum(d.kind == "tool_result" for d in drafts) == census.results, path.name


def test_every_result_of_a_known_call_is_paired_with_it(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(codex, path)
        names = {}
        for d in drafts:
            if d.kind == "tool_call":
                names[d.tool["call_id"]] = d.tool["name"]
            elif d.kind == "tool_result" and d.tool["call_id"] in names:
                assert d.tool["name"] == names[d.tool["call_id"]], (path.name, d.line)


def test_real_codex_sessions_pair_every_call_with_exactly_one_result(shared_transcripts):
    for path in _real(shared_transcripts):
        if not path.name.startswith("agentcmd_"):          # the real 0.40 captures (others are schema fixtures)
            continue
        drafts, _ = parse_file(codex, path)
        calls = [d.tool["call_id"] for d in drafts if d.kind == "tool_call"]
        results = [d.tool["call_id"] for d in drafts if d.kind == "tool_result"]
        assert len(calls) > 10 and Counter(results) == Counter(calls), path.name
        assert all(d.tool["input"] is not None and not isinstance(d.tool["input"], str)
                   for d in drafts if d.kind == "tool_call"), path.name     # JSON arguments arrive parsed


def test_user_text_is_stored_once_and_verbatim_though_written_twice(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(codex, path)
        census = _census(path)
        got = Counter(d.text for d in drafts if d.kind == "user")
        assert got == _once(census.user_events, census.user_items, census.user_completed), path.name


def test_assistant_text_and_reasoning_are_stored_once(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(codex, path)
        census = _census(path)
        said = [d.text for d in drafts if d.kind == "assistant" and not (d.meta or {}).get("thinking")
                and "subtype" not in (d.meta or {})]
        thought = [_body(d) for d in drafts if (d.meta or {}).get("thinking")]
        assert Counter(said) == _once(census.agent_events, census.agent_parts, census.agent_completed), path.name
        assert Counter(thought) == _once(census.reasoning_events, census.reasoning_parts,
                                         census.reasoning_completed), path.name
        assert all(d.text.startswith("<thinking>\n") and d.text.endswith("\n</thinking>")
                   for d in drafts if (d.meta or {}).get("thinking")), path.name


def test_environment_context_is_system_not_user(shared_transcripts):
    seen = 0
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(codex, path)
        env = [d for d in drafts if d.text.startswith("<environment_context>")]
        assert len(env) == _census(path).env_items, path.name
        assert all(d.kind == "system" and d.meta["subtype"] == "environment_context" for d in env), path.name
        seen += len(env)
    assert seen >= 6


def test_one_session_per_file_keys_unique_and_parsing_deterministic(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, bad = parse_file(codex, path)
        assert not bad, path.name
        assert {d.session_id for d in drafts} == {_census(path).session}, path.name
        keys = [d.key for d in drafts]
        assert len(keys) == len(set(keys)), path.name
        assert all(re.fullmatch(rf"codex/{re.escape(_census(path).session)}/[0-9a-f]{{10}}/L\d+/\d+", k) for k in keys), path.name
        assert parse_file(codex, path)[0] == drafts, path.name


def test_a_rollout_cut_anywhere_parses_to_a_prefix_of_the_whole(shared_transcripts):
    # rollouts only grow: what an earlier, shorter copy produced is never changed by what follows
    for path in _real(shared_transcripts):
        recs = records(path)
        whole = list(codex.parse(recs, ParseContext(path=str(path), source_id=str(path))))
        for cut in range(1, len(recs), max(1, len(recs) // 25)):
            part = list(codex.parse(recs[:cut], ParseContext(path=str(path), source_id=str(path))))
            assert part == whole[:len(part)], (path.name, cut)


def test_turns_open_at_each_user_message(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(codex, path)
        turn = f"{_census(path).session}/t0"
        for d in drafts:
            if d.kind == "user":
                assert d.turn_id != turn, (path.name, d.line)
                turn = d.turn_id
            assert d.turn_id == turn, (path.name, d.line)
        assert len({d.turn_id for d in drafts} - {f"{_census(path).session}/t0"}) == \
            sum(d.kind == "user" for d in drafts), path.name


def test_timestamps_and_lines_come_from_the_records(shared_transcripts):
    path = shared_transcripts / "codex" / "agentcmd_rollout_2025-09-24T20-12-23_01997ea4.jsonl"
    by_line = dict(records(path))
    drafts, _ = parse_file(codex, path)
    assert drafts and all(d.ts == to_utc_iso(by_line[d.line]["timestamp"]) and d.ts.endswith("Z") for d in drafts)


def test_a_failed_command_is_an_error_result(shared_transcripts):
    path = shared_transcripts / "codex" / "agentcmd_rollout_2025-09-24T19-22-20_01997e76.jsonl"
    drafts, _ = parse_file(codex, path)
    results = [d for d in drafts if d.kind == "tool_result"]
    assert sum(d.tool["is_error"] for d in results) == 12       # 10 non-zero exits, 2 rejected patches
    wrapped = [d for d in results if d.text.startswith('{"output"')]
    assert len(wrapped) > 100 and all(d.tool["is_error"] == (d.meta["exit_code"] != 0) for d in wrapped)


def test_only_the_event_stream_still_produces_every_message(shared_transcripts):
    drafts, _ = parse_file(codex, shared_transcripts / "codex" / "agtrace_codex_parent_with_spawns.jsonl")
    assert [(d.kind, d.text) for d in drafts if d.kind in ("user", "assistant")] == [
        ("user", "Review the code changes"), ("assistant", "Entering review mode..."),
        ("user", "Review these other changes"), ("assistant", "Second review complete.")]
    assert [_plain(d.turn_id) for d in drafts if d.kind == "user"] == ["parent-spawn-001/t1", "parent-spawn-001/t2"]


def test_a_sub_agent_rollout_is_flagged(shared_transcripts):
    path = shared_transcripts / "codex" / "agtrace_codex_subagent_matched.jsonl"
    drafts, _ = parse_file(codex, path)
    assert drafts and all(d.meta["subagent"] == "review" and d.session_id == "subagent-matched-001" for d in drafts)
    header, *rest = drafts                                                   # the session_meta comes first
    assert header.meta["subtype"] == "session_meta" and header.meta["cwd"]
    assert all(d.meta["model"] == "gpt-5.1-codex-max" for d in rest)         # from the turn_context
    copied, _ = parse_file(codex, path, session="review-copy")
    assert all(d.meta["subagent"] == "review" and d.session_id == "review-copy" for d in copied)


# ---------------------------------------------------------------- the sample rollout

def test_sample_rollout(samples):
    drafts, bad = parse_file(codex, samples / "codex" / "rollout-demo.jsonl")
    assert not bad
    header, *drafts = drafts
    assert header.text == "cwd: /home/dev/gateway\ncodex: codex_cli_rs 0.60.0"
    assert header.meta == {"subtype": "session_meta", "cwd": "/home/dev/gateway", "originator": "codex_cli_rs",
                           "cli_version": "0.60.0", "model_provider": "openai"}
    assert _kinds(drafts) == ["system", "user", "assistant", "tool_call", "tool_result", "tool_call", "tool_result",
                              "tool_call", "tool_result", "assistant"]
    assert {d.session_id for d in drafts} == {"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}
    assert drafts[0].meta == {"subtype": "environment_context"} and drafts[0].turn_id.endswith("/t0")
    assert drafts[1].text.startswith("The gateway keeps dropping connections") and drafts[1].line == 3
    assert drafts[2].text == "<thinking>\n**Checking listener configuration**\n</thinking>"   # not the encrypted blob
    port = next(d for d in drafts if d.kind == "tool_result" and "listen_port=48213" in d.text)
    assert port.tool == {"name": "shell", "call_id": "call_demo_port", "is_error": False}
    assert port.meta == {"exit_code": 0} and port.text.startswith('{"output": "conf/gateway.toml:12:listen_port')
    log = next(d for d in drafts if d.kind == "tool_result" and "E_CONN_RESET_4471" in d.text)
    assert log.meta == {"exit_code": 0} and log.text.startswith("Exit code: 0\n")
    patch = next(d for d in drafts if d.kind == "tool_call" and d.tool["name"] == "apply_patch")
    assert patch.tool["input"].startswith("*** Begin Patch") and patch.text.startswith("apply_patch *** Begin Patch")
    assert sum("listen_port=48213. The log" in d.text for d in drafts) == 1       # the answer, once
    assert drafts[-1].meta == {"model": "gpt-5-codex"} and drafts[-1].line == 15
    assert {_plain(d.turn_id) for d in drafts[1:]} == {"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/t1"}


def test_sample_is_claimed_by_sniff(samples):
    assert codex.sniff([r for _, r in records(samples / "codex" / "rollout-demo.jsonl")][:20])


# ---------------------------------------------------------------- sessions

def test_a_later_session_meta_is_a_copied_ancestor_and_never_switches_the_session():
    # a forked rollout: its own meta, then the parent's history copied in with the parent's meta
    lines = [_meta("child-1", forked_from_id="parent-1"), _meta("parent-1"),
             _user_item("copied question"), _assistant_item("copied answer"),
             _user_item("the child's own question")]
    drafts, bad = _parse(lines)
    assert not bad and {d.session_id for d in drafts} == {"child-1"}
    assert [_plain(d.key) for d in drafts] == ["codex/child-1/L3/0", "codex/child-1/L4/0", "codex/child-1/L5/0"]


def test_session_override_and_derived_session():
    lines = [_meta(), _user_item("hello")]
    drafts, _ = _parse(lines, session="mine")
    assert drafts[0].session_id == "mine" and _plain(drafts[0].key) == "codex/mine/L2/0" and _plain(drafts[0].turn_id) == "mine/t1"
    # no session_meta at all: a stable id derived from the file
    first, _ = _parse(lines[1:])
    again, _ = _parse(lines[1:])
    other, _ = _parse(lines[1:], source_id="/elsewhere/rollout-y.jsonl")
    assert first[0].session_id == again[0].session_id != other[0].session_id
    assert first[0].session_id.startswith("rollout-x-")


# ---------------------------------------------------------------- text written twice

def test_whichever_stream_comes_first_stores_the_text():
    item_first = [_meta(), _user_item("fix the build"), _event(type="user_message", message="fix the build"),
                  _event(type="agent_reasoning", text="**Reading the log**"),
                  _item(type="reasoning", summary=[{"type": "summary_text", "text": "**Reading the log**"}],
                        encrypted_content="gAAA-opaque"),
                  _assistant_item("Fixed."), _event(type="agent_message", message="Fixed.")]
    drafts, _ = _parse(item_first)
    assert [(d.kind, d.line) for d in drafts] == [("user", 2), ("assistant", 4), ("assistant", 6)]
    assert "gAAA" not in "".join(d.text for d in drafts)
    event_first = [item_first[0], item_first[2], item_first[1], item_first[4], item_first[3], item_first[6],
                   item_first[5]]
    drafts, _ = _parse(event_first)
    assert [(d.kind, d.line) for d in drafts] == [("user", 2), ("assistant", 4), ("assistant", 6)]


def test_the_same_text_in_another_turn_is_a_new_message():
    lines = [_meta(), _user_item("continue"), _event(type="user_message", message="continue"), _assistant_item("Ok"),
             _user_item("continue"), _event(type="user_message", message="continue"), _assistant_item("Ok"),
             _assistant_item("Ok")]
    drafts, _ = _parse(lines)
    assert [(d.kind, d.text, _plain(d.turn_id)[-2:]) for d in drafts] == [
        ("user", "continue", "t1"), ("assistant", "Ok", "t1"),
        ("user", "continue", "t2"), ("assistant", "Ok", "t2"), ("assistant", "Ok", "t2")]


def test_an_assistant_message_the_ui_repeats_part_by_part_is_stored_once():
    lines = [_meta(), _user_item("summarise"), _event(type="agent_message", message="First part."),
             _event(type="agent_message", message="Second part."), _assistant_item("First part.", "Second part.")]
    drafts, _ = _parse(lines)
    assert [d.text for d in drafts if d.kind == "assistant"] == ["First part.", "Second part."]
    # and a part the UI never showed is still stored
    drafts, _ = _parse(lines[:3] + lines[4:])
    assert [d.text for d in drafts if d.kind == "assistant"] == ["First part.", "Second part."]


def test_image_labels_are_not_user_text_and_images_are_counted():
    item = _item(type="message", role="user", content=[
        {"type": "input_text", "text": "<image name=[Image #1]>"}, {"type": "input_image", "image_url": "data:..."},
        {"type": "input_text", "text": "</image>"}, {"type": "input_text", "text": "why is this red?\n"}])
    drafts, _ = _parse([_meta(), item, _event(type="user_message", message="why is this red?\n",
                                              images=["data:..."])])
    assert [(d.kind, d.text, d.meta) for d in drafts] == [("user", "why is this red?\n", {"images": 1})]
    only_image = _item(type="message", role="user", content=[{"type": "input_image", "image_url": "data:..."}])
    drafts, _ = _parse([_meta(), only_image])
    assert [(d.kind, d.text) for d in drafts] == [("user", "[image]")]


def test_user_text_is_kept_verbatim():
    text = "  two leading spaces,\r\ntrailing tab\t\n\n"
    drafts, _ = _parse([_meta(), _user_item(text), _event(type="user_message", message=text)])
    assert [d.text for d in drafts] == [text]


# ---------------------------------------------------------------- harness text, markers

@pytest.mark.parametrize("text, subtype", [
    ("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", "environment_context"),
    ("<user_instructions>\n\nUse tabs.\n\n</user_instructions>", "user_instructions"),
    ("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nRun make test.\n</INSTRUCTIONS>", "agents_md"),
    ("<user_shell_command>\n<command>\nls\n</command>\n</user_shell_command>", "user_shell_command"),
    ("<skill>\n<name>deploy</name>\n</skill>", "skill"),
])
def test_harness_text_in_a_user_message_is_system(text, subtype):
    drafts, _ = _parse([_meta(), _user_item(text), _user_item("real question")])
    assert [(d.kind, d.meta) for d in drafts] == [("system", {"subtype": subtype}), ("user", None)]
    assert drafts[0].text == text and drafts[0].turn_id.endswith("/t0")


def test_developer_messages_are_system():
    lines = [_meta(), _item(type="message", role="developer", content=[{"type": "input_text", "text": "Be terse."}])]
    drafts, _ = _parse(lines)
    assert [(d.kind, d.text, d.meta) for d in drafts] == [("system", "Be terse.", {"role": "developer"})]


def test_an_interrupted_turn_is_one_marker():
    lines = [_meta(), _user_item("go"), _event(type="turn_aborted", reason="interrupted"),
             _user_item("<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>")]
    drafts, _ = _parse(lines)
    assert [(d.kind, d.text, d.meta) for d in drafts] == [
        ("user", "go", None), ("system", "<turn_aborted> interrupted", {"subtype": "turn_aborted"})]


def test_a_compaction_is_one_marker_and_every_summary_is_kept():
    lines = [_meta(), _user_item("go"), _rec("compacted", {"message": "Summary: we fixed the build."}),
             _event(type="context_compacted"), _item(type="compaction", encrypted_content="gAAA"),
             _assistant_item("next"), _event(type="context_compacted"), _rec("compacted", {"message": ""})]
    drafts, _ = _parse(lines)
    assert [(d.kind, d.text) for d in drafts] == [
        ("user", "go"), ("system", "Summary: we fixed the build."), ("assistant", "next"), ("system", "[compacted]")]
    assert all(d.meta == {"subtype": "compacted"} for d in drafts if d.kind == "system")


def test_metadata_lines_are_skipped_and_non_records_are_bad():
    lines = [_meta(), _rec("turn_context", {"model": "gpt-5", "cwd": "/w"}), _event(type="token_count", info=None),
             _event(type="task_started", turn_id="t"), _rec("world_state", {"full": True, "state": {}}),
             _rec("inter_agent_communication_metadata", {"trigger_turn": False}),
             _item(type="ghost_snapshot", ghost_commit={"id": "abc"}),
             42, "text", [1], {"silly": "this"}, {"type": "response_item"}, {"type": "event_msg", "payload": "x"}]
    drafts, bad = _parse(lines)
    assert drafts == []
    assert [b.line for b in bad] == [8, 9, 10, 11, 12, 13]


# ---------------------------------------------------------------- tools

@pytest.mark.parametrize("output, exit_code, is_error", [
    ('{"output":"ok\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', 0, False),
    ('{"output":"boom\\n","metadata":{"exit_code":2,"duration_seconds":0.1}}', 2, True),
    ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nnope\n", 1, True),
    ("Chunk ID: 9\nWall time: 1.0 seconds\nProcess exited with code 0\nOutput:\nfine\n", 0, False),
    ("failed in sandbox Seatbelt with execution error: sandbox denied exec error, exit code: 1, stdout: ", 1, True),
    ("patch rejected by user", None, True),
    ("Plan updated", None, False),
    ('{"output":"not a wrapper"', None, False),
])
def test_a_result_is_an_error_when_its_output_says_the_command_failed(output, exit_code, is_error):
    drafts, _ = _parse([_meta(), _call("c1", "make"), _output("c1", output)])
    result = drafts[-1]
    assert result.text == output                                  # verbatim, wrapper and all
    assert result.tool == {"name": "shell", "call_id": "c1", "is_error": is_error}
    assert (result.meta or {}).get("exit_code") == exit_code


def test_calls_and_outputs_pair_by_call_id_and_unparsable_arguments_stay_raw():
    lines = [_meta(), _call("c1", "ls"), _item(type="function_call", name="shell", call_id="c2", arguments="{oops"),
             _output("c2", "x"), _output("c1", [{"type": "input_text", "text": "a.txt"},
                                                 {"type": "input_image", "image_url": "data:..."}]),
             _output("ghost", "an output whose call is not in the file")]
    drafts, _ = _parse(lines)
    assert drafts[0].tool["input"] == {"command": ["bash", "-lc", "ls"]}
    assert drafts[1].tool["input"] == "{oops" and drafts[1].text == "shell {oops"
    assert [(d.tool["call_id"], d.tool["name"], d.text) for d in drafts[2:]] == [
        ("c2", "shell", "x"), ("c1", "shell", "a.txt\n[image]"),
        ("ghost", None, "an output whose call is not in the file")]


def test_custom_and_other_call_items():
    lines = [_meta(),
             _item(type="custom_tool_call", call_id="p1", name="apply_patch", input="*** Begin Patch\n*** End Patch"),
             _item(type="custom_tool_call_output", call_id="p1", output="Success."),
             _item(type="local_shell_call", call_id="s1", status="completed",
                   action={"type": "exec", "command": ["ls"]}),
             _item(type="web_search_call", id="ws1", status="completed", action={"type": "search", "query": "q"}),
             _event(type="web_search_end", call_id="ws1", query="q",
                    results=[{"title": "T", "url": "https://x.invalid", "snippet": "S"}]),
             _item(type="image_generation_call", id="ig1", status="completed", revised_prompt="a cat", result="iVBOR")]
    drafts, _ = _parse(lines)
    assert [(d.kind, d.tool["name"], d.tool["call_id"]) for d in drafts] == [
        ("tool_call", "apply_patch", "p1"), ("tool_result", "apply_patch", "p1"),
        ("tool_call", "local_shell", "s1"), ("tool_call", "web_search", "ws1"), ("tool_result", "web_search", "ws1"),
        ("tool_call", "image_generation", "ig1"), ("tool_result", "image_generation", "ig1")]
    assert drafts[0].tool["input"] == "*** Begin Patch\n*** End Patch"
    assert drafts[4].text == "T <https://x.invalid> S" and drafts[6].text == "[image]"
    assert "iVBOR" not in "".join(d.text for d in drafts)


def test_ui_tool_events_mirror_their_call_items_and_stand_in_when_none_came_first():
    mcp_end = _event(type="mcp_tool_call_end", call_id="m1",
                     invocation={"server": "docs", "tool": "search", "arguments": {"q": "port"}},
                     result={"Ok": {"content": [{"type": "text", "text": "port 48213"}], "isError": False}})
    exec_end = _event(type="exec_command_end", call_id="e1", command=["make"], exit_code=2, source="agent",
                      aggregated_output="make: *** Error 2\n")
    user_shell = _event(type="exec_command_end", call_id="u1", command=["ls"], exit_code=0, source="user_shell",
                        aggregated_output="a\n")
    drafts, _ = _parse([_meta(), mcp_end, exec_end, user_shell])
    assert [(d.kind, d.tool["name"], d.text, d.tool.get("is_error")) for d in drafts] == [
        ("tool_call", "docs.search", 'docs.search {"q":"port"}', None),
        ("tool_result", "docs.search", "port 48213", False),
        ("tool_call", "exec_command", 'exec_command {"command":["make"]}', None),
        ("tool_result", "exec_command", "make: *** Error 2\n", True)]
    assert [d.key.rsplit("/", 2)[1:] for d in drafts[:2]] == [["L2", "0"], ["L2", "1"]]
    mirrored = [_meta(), _item(type="function_call", name="docs__search", call_id="m1", arguments="{}"),
                mcp_end, _output("m1", "port 48213")]
    drafts, _ = _parse(mirrored)
    assert _kinds(drafts) == ["tool_call", "tool_result"]


def test_the_id_less_legacy_layout_pairs_a_result_with_the_open_call():
    lines = [_meta(), _item(type="tool_call", function={"name": "run"}, arguments={"command": "false"}),
             _item(type="tool_result", name="run", result={"stdout": "", "stderr": "", "exitCode": 1})]
    drafts, _ = _parse(lines)
    assert drafts[0].tool["call_id"] == drafts[1].tool["call_id"] == "codex-L2"
    assert drafts[1].tool == {"name": "run", "call_id": "codex-L2", "is_error": True}


# ---------------------------------------------------------------- detection

@pytest.mark.parametrize("folder", ["claude_code", "openai_chat", "anthropic_messages"])
def test_sniff_claims_every_rollout_and_no_other_format(shared_transcripts, folder):
    for path in _real(shared_transcripts):
        assert codex.sniff([r for _, r in records(path)[:20]]), path.name
    others = sorted((shared_transcripts / folder).glob("*.json*"))
    assert others
    for path in others:
        samples = [r for _, r in records(path)[:20]] if path.suffix == ".jsonl" else [orjson.loads(path.read_bytes())]
        assert not codex.sniff(samples), path.name


def test_sniff_refuses_look_alikes():
    claude_line = {"type": "user", "sessionId": SID, "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    trace_event = {"id": "01J", "seq": 1, "hash": "h", "kind": "user", "text": "hi", "session_id": "s"}
    history = {"session_id": SID, "ts": 1760000000, "text": "hi"}
    other_payload = {"type": "webhook", "payload": {"id": 1}}
    bare_error = {"type": "error", "message": "boom"}          # alone, no sign of `codex exec --json`
    for samples in ([claude_line], [trace_event], [history], [other_payload], [bare_error], [42], ["x"], [[1]], []):
        assert not codex.sniff(samples), samples
    assert codex.sniff([_meta(), _user_item("hi")]) and codex.sniff([_event(type="user_message", message="hi")])
    # `codex exec --json` output is the format's other layout (reducers/formats/codex_exec.py)
    assert codex.sniff([{"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "hi"}}])


def _plain(ident: str) -> str:
    """A key or turn id without the record digest it carries."""
    return re.sub(r"-[0-9a-f]{10}$", "", re.sub(r"/[0-9a-f]{10}/", "/", ident))


# ---------------------------------------------------------------- the session's setting

def test_the_session_meta_keeps_where_the_session_ran_and_the_instructions_the_model_was_given():
    drafts, _ = _parse([
        _meta(cwd="/work/app", originator="codex_cli_rs", cli_version="0.98.0", model_provider="openai",
              git={"commit_hash": "9d356847d46ece3a0bbd3bd64eef89afc78dae74", "branch": "fix/retry",
                   "repository_url": "git@github.com:acme/app.git"},
              instructions="Always run the linter.", base_instructions={"text": "You are Codex, a coding agent."},
              dynamic_tools=[{"name": "deploy", "description": "ship it"}]),
        _user_item("hello")])
    header = drafts[0]
    assert (header.kind, header.turn_id.endswith("/t0"), header.line) == ("system", True, 1)
    assert header.text == ("cwd: /work/app\n"
                           "git: fix/retry @ 9d356847d46ece3a0bbd3bd64eef89afc78dae74 (git@github.com:acme/app.git)\n"
                           "codex: codex_cli_rs 0.98.0\n"
                           "tools: deploy\n"
                           "instructions:\nAlways run the linter.\n"
                           "base instructions:\nYou are Codex, a coding agent.")
    assert header.meta["git"]["branch"] == "fix/retry" and header.meta["subtype"] == "session_meta"
    assert [d.kind for d in drafts[1:]] == ["user"]


def test_a_session_meta_with_only_an_id_and_a_copied_ancestors_add_nothing():
    drafts, _ = _parse([_meta(), _user_item("hello"), _meta("parent-thread", cwd="/elsewhere")])
    assert [d.kind for d in drafts] == ["user"]
