"""Claude Code session logs: every call and result kept and paired, user text
verbatim, streamed messages merged into one event per text run, summaries,
compactions and injected lines as system, sub-agents flagged."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import orjson
import pytest

from reducers.drafts import BadRecord, Draft, ParseContext, merge_adjacent
from reducers.formats import claude_code
from reducers.formats.common import content_digest
from tests.formats.real_files import parse_file, records

SID = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"


def _real(shared_transcripts):
    paths = sorted((shared_transcripts / "claude_code").glob("*.jsonl"))
    assert len(paths) >= 15
    return paths


def _parse(lines: list, session: str | None = None, source_id: str = "/logs/s.jsonl"):
    items = list(claude_code.parse(list(enumerate(lines, 1)), ParseContext(path=source_id, source_id=source_id,
                                                                            session=session)))
    return [d for d in items if isinstance(d, Draft)], [b for b in items if isinstance(b, BadRecord)]


def _user(uuid: str, content, **extra) -> dict:
    return {"type": "user", "sessionId": SID, "uuid": uuid, "parentUuid": None, "isSidechain": False,
            "timestamp": "2026-01-05T10:00:00Z", "message": {"role": "user", "content": content}, **extra}


def _assistant(uuid: str, mid: str | None, *blocks, **extra) -> dict:
    message = {"role": "assistant", "model": "claude-sonnet-4-5", "content": list(blocks)}
    if mid:
        message["id"] = mid
    return {"type": "assistant", "sessionId": SID, "uuid": uuid, "parentUuid": None, "isSidechain": False,
            "timestamp": "2026-01-05T10:00:01Z", "message": message, **extra}


def _text(t): return {"type": "text", "text": t}
def _use(call_id, name, inp): return {"type": "tool_use", "id": call_id, "name": name, "input": inp}
def _result(call_id, content, **kw): return {"type": "tool_result", "tool_use_id": call_id, "content": content, **kw}


# ---------------------------------------------------------------- the real transcripts

@dataclass
class _Census:
    """What a file holds, counted straight from its records (not by the parser)."""
    call_ids: set = field(default_factory=set)
    idless_calls: int = 0
    result_blocks: int = 0
    user_strings: list = field(default_factory=list)
    user_text_blocks: list = field(default_factory=list)
    text_runs: int = 0


def _census(path) -> _Census:
    c = _Census()
    run = None                      # the message id of the text/thinking run in progress
    for _, rec in records(path):
        if not isinstance(rec, dict):
            continue
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = msg.get("content")
        if rec.get("type") == "tool_use":
            c.idless_calls += 1
        if rec.get("type") == "tool_result":
            c.result_blocks += 1
        if rec.get("type") == "user":
            run = None
            plain = not rec.get("isMeta") and not rec.get("isCompactSummary")
            if isinstance(content, str) and plain:
                c.user_strings.append(content)
            for b in content if isinstance(content, list) else ():
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    c.result_blocks += 1
                elif isinstance(b, dict) and b.get("type") == "text" and plain and b["text"]:
                    c.user_text_blocks.append(b["text"])
        if rec.get("type") == "assistant" and isinstance(content, list):
            for b in content:
                if b.get("type") == "tool_use":
                    run = None
                    if b.get("id"):
                        c.call_ids.add(b["id"])
                    else:
                        c.idless_calls += 1
                elif b.get("type") in ("text", "thinking") and (b.get("text") or b.get("thinking")):
                    if run != (msg.get("id") or rec.get("uuid")):
                        c.text_runs += 1
                        run = msg.get("id") or rec.get("uuid")
    return c


def test_every_tool_use_is_one_call_and_every_result_block_one_result(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(claude_code, path)
        census = _census(path)
        calls = [d for d in drafts if d.kind == "tool_call"]
        results = [d for d in drafts if d.kind == "tool_result"]
        assert len(calls) == len(census.call_ids) + census.idless_calls, path.name
        assert census.call_ids <= {d.tool["call_id"] for d in calls}, path.name
        assert len(results) == census.result_blocks, path.name


def test_every_result_of_a_known_call_is_paired_with_it(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(claude_code, path)
        census = _census(path)
        names = {}
        for d in drafts:
            if d.kind == "tool_call":
                names[d.tool["call_id"]] = d.tool["name"]
            elif d.kind == "tool_result" and d.tool["call_id"] in census.call_ids:
                assert d.tool["call_id"] in names, (path.name, d.line)        # the call came first
                assert d.tool["name"] == names[d.tool["call_id"]], (path.name, d.line)


def test_each_result_answers_exactly_the_call_its_source_block_names(shared_transcripts):
    # read from the source alone: line -> the tool_use_id of each tool_result block, in order
    for path in _real(shared_transcripts):
        named: dict[int, list[str]] = {}
        for line, rec in records(path):
            if not isinstance(rec, dict):
                continue
            msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
            blocks = msg.get("content") if rec.get("type") == "user" else None
            ids = [b["tool_use_id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"
                   and isinstance(b.get("tool_use_id"), str)] if isinstance(blocks, list) else []
            if ids:
                named[line] = ids
        drafts, _ = parse_file(claude_code, path)
        got: dict[int, list[str]] = {}
        for d in drafts:
            if d.kind == "tool_result" and d.line in named:
                got.setdefault(d.line, []).append(d.tool["call_id"])
        assert got == named, path.name


def test_counts_of_the_real_captures(shared_transcripts):
    """user messages, tool calls, tool results, results paired with a call of this file."""
    expected = {
        "agentcmd_full-session.jsonl": (2, 23, 20, 20),
        "agentcmd_full-session-two.jsonl": (8, 10, 10, 10),      # 6 typed + 2 "[Request interrupted by user]"
        "agentcmd_full-session-four.jsonl": (5, 27, 27, 27),
        "agentcmd_full-session-five.jsonl": (1, 5, 5, 5),
        "agentcmd_full-session-askuserquestion.jsonl": (3, 3, 2, 2),
        "agtrace_claude_session.jsonl": (4, 4, 4, 4),
        "ccviewer_1af7fc5e.jsonl": (1, 12, 12, 12),
        "ccviewer_fe5e1c67.jsonl": (7, 167, 167, 167),
    }
    for name, (users, calls, results, paired) in expected.items():
        drafts, bad = parse_file(claude_code, shared_transcripts / "claude_code" / name)
        call_ids = {d.tool["call_id"] for d in drafts if d.kind == "tool_call"}
        got = [d for d in drafts if d.kind == "tool_result"]
        assert not bad
        assert (sum(d.kind == "user" for d in drafts), len(call_ids), len(got),
                sum(r.tool["call_id"] in call_ids for r in got)) == (users, calls, results, paired), name


def test_user_text_is_kept_verbatim(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(claude_code, path)
        census = _census(path)
        users = [d.text for d in drafts if d.kind == "user"]
        for text in census.user_strings:
            assert text in users, (path.name, text[:60])
        for text in census.user_text_blocks:          # blocks of one line may share a draft
            assert any(text in u for u in users), (path.name, text[:60])


def test_keys_are_unique_and_parsing_is_deterministic(shared_transcripts):
    for path in _real(shared_transcripts):
        first, bad1 = parse_file(claude_code, path)
        second, bad2 = parse_file(claude_code, path)
        assert first == second and bad1 == bad2, path.name
        keys = [d.key for d in first]
        assert len(keys) == len(set(keys)), path.name
        assert all(d.key.startswith(f"cc/{d.session_id}/") for d in first), path.name
        assert all(d.turn_id.startswith(f"{d.session_id}/") for d in first), path.name


def test_a_streamed_message_becomes_one_event_per_text_run(shared_transcripts):
    for path in _real(shared_transcripts):
        drafts, _ = parse_file(claude_code, path)
        merged = merge_adjacent(drafts)
        texts = [d for d in merged if d.kind == "assistant"]
        groups = [d.merge_group for d in merged]
        # maximal: no two neighbouring events of one message are left unmerged
        assert all(not (a == b and a is not None and x.kind == y.kind == "assistant")
                   for a, b, x, y in zip(groups, groups[1:], merged, merged[1:])), path.name
        if path.name.startswith(("agentcmd_", "agtrace_", "ccviewer_", "ccl_", "simonw_")):
            assert len(texts) == _census(path).text_runs, path.name


def test_thinking_and_text_of_one_message_merge_in_order(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agtrace_claude_session.jsonl")
    merged = merge_adjacent(drafts)
    first = next(d for d in merged if d.kind == "assistant")
    assert first.text.startswith("<thinking>\nThe user wants me to")
    assert "</thinking>\n\nI'll create the myapp directory" in first.text
    assert len(first.all_keys()) == 2 and "thinking" not in (first.meta or {})   # visible text too now


def test_summaries_compactions_and_injected_lines_are_system_not_user(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agentsessions_claude_small.jsonl")
    system = {d.line: (d.meta or {}).get("subtype") for d in drafts if d.kind == "system"}
    text = {d.line: d.text for d in drafts}
    assert (system[6], text[6]) == ("summary", "Claude Code: Context usage summary")
    assert (system[21], text[21]) == ("compact_boundary", "[compact_boundary] trigger=auto preTokens=120000")
    assert (system[22], text[22]) == ("compact_summary", "Summary of prior context.")
    assert not any(d.kind == "user" and d.text == "Summary of prior context." for d in drafts)

    caveat = "Caveat: The messages below were generated by the user while running local commands."
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agtrace_claude_session.jsonl")
    injected = [d for d in drafts if d.text.startswith(caveat)]
    assert [(d.kind, d.meta) for d in injected] == [("system", {"is_meta": True})]
    assert [d.kind for d in drafts if d.text.startswith("<command-name>/exit")] == ["user"]


def test_model_visible_attachments_become_system_and_bookkeeping_is_skipped(shared_transcripts):
    drafts, bad = parse_file(claude_code, shared_transcripts / "claude_code" / "agentsessions_claude_small.jsonl")
    attached = {d.meta["attachment"] for d in drafts if d.meta and "attachment" in d.meta}
    assert {"hook_additional_context", "nested_memory", "queued_command", "edited_text_file", "todo_reminder",
            "task_reminder", "total_tokens_reminder", "file", "invoked_skills"} <= attached
    assert not attached & {"deferred_tools_delta", "agent_listing_delta", "hook_success", "auto_mode",
                           "command_permissions", "budget_usd", "plan_mode"}
    queued = [d for d in drafts if (d.meta or {}).get("attachment") == "queued_command"]
    assert "[image]\n[trimmed for fixture]" in {d.text for d in queued}
    # a background task's `result` line is session state, not the model's: one system event
    assert not bad
    assert [(d.kind, d.meta["subtype"]) for d in drafts if "stage0 placeholder result" in d.text] == [("system", "result")]


def test_old_top_level_tool_records_pair_by_tool_name(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agentsessions_claude_schema_drift.jsonl")
    kinds = [(d.kind, d.text) for d in drafts if d.kind != "system"]
    assert kinds == [("user", "Open README"), ("tool_call", 'bash {"command":"cat README.md"}'),
                     ("tool_result", "# Title\n\nBody\n"), ("assistant", "Read README and extracted the title."),
                     ("user", "List files")]
    call, result = drafts[1], drafts[2]
    assert result.tool == {"name": "bash", "call_id": call.tool["call_id"], "is_error": False}


def test_results_without_tool_use_id_find_their_id_less_call(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agentsessions_claude_large.jsonl")
    call = next(d for d in drafts if d.kind == "tool_call")
    result = next(d for d in drafts if d.kind == "tool_result")
    assert call.tool["call_id"] == result.tool["call_id"] and result.tool["name"] == "bash"


def test_sidechains_are_flagged_and_keep_their_own_turns(shared_transcripts):
    drafts, _ = parse_file(claude_code, shared_transcripts / "claude_code" / "agtrace_claude_agent_sidechain.jsonl")
    assert len(drafts) == 2
    assert all(d.meta["sidechain"] is True and d.meta["agent_id"] == "0c4c3cf8" for d in drafts)

    path = shared_transcripts / "claude_code" / "ccviewer_fe5e1c67.jsonl"
    drafts, _ = parse_file(claude_code, path)
    side = {line for line, r in records(path) if isinstance(r, dict) and r.get("isSidechain")}
    assert {d.line for d in drafts if (d.meta or {}).get("sidechain")} == {d.line for d in drafts} & side
    # the orchestrator's Task results belong to the turn its user opened, not to a sub-agent's prompt
    tasks = [d for d in drafts if d.kind == "tool_result" and d.tool["name"] == "Task"]
    assert len(tasks) == 5
    assert {t.turn_id for t in tasks} == {"fe5e1c67-53e7-4862-81ae-d0e013e3270b/62e0bdc0-a1e4-4d5c-8509-3b9d0d57cc67"}
    prompts = [d for d in drafts if d.kind == "user" and d.meta and d.meta.get("sidechain")]
    assert len(prompts) == len({d.turn_id for d in prompts}) == 5


def test_junk_lines_are_bad_records_and_the_rest_still_parses(shared_transcripts):
    drafts, bad = parse_file(claude_code, shared_transcripts / "claude_code" / "ccl_edge_cases.jsonl")
    assert [b.line for b in bad] == [10, 11, 13, 14, 15, 16]   # 10, 11: user lines with no readable message
    assert {d.line for d in drafts} == {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 18, 19}
    reused = [d for d in drafts if d.uuid in ("edge_010", "edge_011")]
    assert {d.key.split("/")[2] for d in reused} == {"edge_010@18", "edge_011@12"}   # uuids reused by later lines
    assert "wow error" in [d.text for d in drafts if d.kind == "user"]
    failing = next(d for d in drafts if d.kind == "tool_result")
    assert failing.tool == {"name": "FailingTool", "call_id": "tool_edge_001", "is_error": True}


# ---------------------------------------------------------------- sniff

def test_sniff_claims_every_claude_code_file(shared_transcripts):
    for path in _real(shared_transcripts):
        assert claude_code.sniff([r for _, r in records(path)[:20]]), path.name


@pytest.mark.parametrize("folder", ["codex", "openai_chat", "anthropic_messages"])
def test_sniff_refuses_other_formats(shared_transcripts, folder):
    paths = sorted((shared_transcripts / folder).glob("*.json*"))
    assert paths
    for path in paths:
        if path.suffix == ".jsonl":
            samples = [r for _, r in records(path)[:20]]
        else:
            samples = [orjson.loads(path.read_bytes())]
        assert not claude_code.sniff(samples), path.name


def test_sniff_refuses_trace_events_bare_messages_and_junk():
    assert not claude_code.sniff([{"id": "01J", "seq": 1, "hash": "ab", "kind": "user", "type": "user",
                                   "sessionId": SID, "text": "hi"}])
    assert not claude_code.sniff([{"role": "user", "content": "hi", "type": "user", "sessionId": SID}])
    assert not claude_code.sniff([{"type": "response_item", "payload": {"type": "message"}, "sessionId": SID}])
    assert not claude_code.sniff([42, "text", [1], {"silly": "this"}])
    assert not claude_code.sniff([])
    assert claude_code.sniff([{"type": "summary", "summary": "s", "leafUuid": "u"}, _user("u1", "hi")])


# ---------------------------------------------------------------- the mapping, record by record

def _k(key: str) -> str:
    """A key without the digest of what its line says (`uuid~digest`), which
    the tests of identity below look at on their own."""
    return re.sub(r"^(cc/[^/]+/(?!L@)[^/~]+)~[0-9a-f]{10}/", r"\1/", key)


def test_a_user_string_is_one_verbatim_user_draft_that_opens_a_turn():
    drafts, _ = _parse([_user("u1", "  fix the build\n\tplease  ")])
    [d] = drafts
    assert (d.kind, d.text, d.session_id, _k(d.key), d.turn_id, d.line, d.uuid, d.ts) == (
        "user", "  fix the build\n\tplease  ", SID, f"cc/{SID}/u1/0", f"{SID}/u1", 1, "u1", "2026-01-05T10:00:00.000Z")


def test_user_blocks_join_text_and_mark_images_and_split_off_tool_results():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
    lines = [_assistant("a1", "msg_1", _use("toolu_1", "Bash", {"command": "ls"})),
             _user("u1", [_result("toolu_1", [_text("a.txt")], is_error=True), _text("look at this"), image,
                          _text("and this")])]
    drafts, _ = _parse(lines)
    result, typed = drafts[1], drafts[2]
    assert (result.kind, result.text, _k(result.key)) == ("tool_result", "a.txt", f"cc/{SID}/u1/0")
    assert result.tool == {"name": "Bash", "call_id": "toolu_1", "is_error": True}
    assert result.turn_id == f"{SID}/start"                    # answers the call before the user spoke again
    assert (typed.kind, typed.text, _k(typed.key)) == ("user", "look at this\n\n[image]\n\nand this", f"cc/{SID}/u1/1")
    assert typed.turn_id == f"{SID}/u1"


def test_a_result_reads_content_over_text_and_keeps_an_unknown_call():
    block = {"type": "tool_result", "tool_use_id": "toolu_gone", "text": "short", "content": [_text("full output")]}
    drafts, _ = _parse([_user("u1", [block])])
    assert drafts[0].text == "full output"
    assert drafts[0].tool == {"name": None, "call_id": "toolu_gone", "is_error": False}


def test_injected_and_compact_summary_user_lines_are_system():
    drafts, _ = _parse([_user("u0", "hello"),
                        _user("u1", "<system-reminder>be brief</system-reminder>", isMeta=True),
                        _user("u2", "Previously: we fixed the build.", isCompactSummary=True)])
    assert [(d.kind, d.meta) for d in drafts] == [
        ("user", None), ("system", {"is_meta": True}), ("system", {"subtype": "compact_summary"})]
    assert {d.turn_id for d in drafts} == {f"{SID}/u0"}         # neither opens a turn


def test_assistant_blocks_thinking_text_and_calls():
    lines = [_user("u1", "go"),
             _assistant("a1", "msg_1", {"type": "thinking", "thinking": "plan it", "signature": "x"}),
             _assistant("a2", "msg_1", _text("On it.")),
             _assistant("a3", "msg_1", _use("toolu_1", "Read", {"file_path": "/a"})),
             _assistant("a4", "msg_2", {"type": "redacted_thinking", "data": "opaque"}, _text("Done."))]
    drafts, _ = _parse(lines)
    got = [(d.kind, d.text, _k(d.key).split("/", 2)[2], d.merge_group, d.meta) for d in drafts[1:]]
    model = {"model": "claude-sonnet-4-5"}
    assert got == [
        ("assistant", "<thinking>\nplan it\n</thinking>", "a1/0", "msg_1", {**model, "thinking": True}),
        ("assistant", "On it.", "a2/0", "msg_1", model),
        ("tool_call", 'Read {"file_path":"/a"}', "a3/0", None, model),
        ("assistant", "<thinking>[redacted]</thinking>", "a4/0", "msg_2", {**model, "thinking": True}),
        ("assistant", "Done.", "a4/1", "msg_2", model)]
    assert drafts[3].tool == {"name": "Read", "call_id": "toolu_1", "input": {"file_path": "/a"}}
    merged = merge_adjacent(drafts)
    assert [d.text for d in merged if d.kind == "assistant"] == [
        "<thinking>\nplan it\n</thinking>\n\nOn it.", "<thinking>[redacted]</thinking>\n\nDone."]
    assert [_k(k) for k in merged[1].all_keys()] == [f"cc/{SID}/a1/0", f"cc/{SID}/a2/0"]


def test_blocks_a_writer_re_emits_are_dropped():
    ls = _use("toolu_1", "Bash", {"command": "ls"})
    lines = [_assistant("a1", "msg_1", _text("Looking.")),
             _assistant("a2", "msg_1", _text("Looking."), ls),
             _assistant("a3", "msg_1", _text("Looking."), ls, _text("Found it.")),
             _assistant("a4", "msg_2", _text("Looking."))]                     # another message may say the same
    drafts, _ = _parse(lines)
    assert [(d.uuid, d.text) for d in drafts] == [("a1", "Looking."), ("a2", 'Bash {"command":"ls"}'),
                                                  ("a3", "Found it."), ("a4", "Looking.")]


def test_a_message_without_id_merges_only_within_its_line():
    drafts, _ = _parse([_assistant("a1", None, _text("one"), _text("two")), _assistant("a2", None, _text("three"))])
    assert [d.merge_group for d in drafts] == ["a1", "a1", "a2"]
    assert [d.text for d in merge_adjacent(drafts)] == ["one\n\ntwo", "three"]


def test_summary_system_and_compact_boundary_lines():
    lines = [{"type": "summary", "summary": "Fixed the build", "leafUuid": "u9"},
             _user("u1", "hi"),
             {"type": "system", "subtype": "compact_boundary", "sessionId": SID, "uuid": "s1", "content": "Compacted",
              "compactMetadata": {"trigger": "manual", "preTokens": 9000}},
             {"type": "system", "subtype": "informational", "sessionId": SID, "uuid": "s2", "content": "Hook ran"},
             {"type": "system", "subtype": "turn_duration", "sessionId": SID, "uuid": "s3", "durationMs": 5},
             {"type": "system", "subtype": "api_error", "sessionId": SID, "uuid": "s4", "content": None}]
    drafts, bad = _parse(lines)
    digest = hashlib.sha256(b"Fixed the build").hexdigest()[:12]
    assert not bad
    assert [(d.kind, d.text, _k(d.key), d.meta) for d in drafts if d.kind == "system"] == [
        ("system", "Fixed the build", f"cc/{SID}/summary/u9/{digest}", {"subtype": "summary", "leafUuid": "u9"}),
        ("system", "[compact_boundary] trigger=manual preTokens=9000", f"cc/{SID}/s1/0",
         {"subtype": "compact_boundary"}),
        ("system", "Hook ran", f"cc/{SID}/s2/0", {"subtype": "informational"})]


def test_attachments_map_the_text_the_model_was_shown():
    def att(uuid, body):
        return {"type": "attachment", "sessionId": SID, "uuid": uuid, "attachment": body}
    lines = [att("t1", {"type": "hook_additional_context", "content": ["use pnpm"]}),
             att("t2", {"type": "nested_memory", "path": "/r/CLAUDE.md", "content": {"content": "Run make test."}}),
             att("t3", {"type": "queued_command", "prompt": "also update the docs"}),
             att("t4", {"type": "edited_text_file", "filename": "/r/a.py", "snippet": "12\tx = 1"}),
             att("t5", {"type": "todo_reminder", "content": [{"content": "ship", "status": "pending"}]}),
             att("t6", {"type": "total_tokens_reminder", "text": "40k tokens left"}),
             att("t7", {"type": "todo_reminder", "content": []}),
             att("t8", {"type": "deferred_tools_delta", "addedNames": ["bash"]}),
             att("t9", {"type": "hook_success", "content": "", "stdout": "{}"})]
    drafts, bad = _parse(lines)
    assert not bad
    assert [(d.uuid, d.kind, d.text, d.meta["attachment"]) for d in drafts] == [
        ("t1", "system", "use pnpm", "hook_additional_context"),
        ("t2", "system", "Run make test.", "nested_memory"),
        ("t3", "system", "also update the docs", "queued_command"),
        ("t4", "system", "12\tx = 1", "edited_text_file"),
        ("t5", "system", '[{"content":"ship","status":"pending"}]', "todo_reminder"),
        ("t6", "system", "40k tokens left", "total_tokens_reminder")]


def test_bookkeeping_is_skipped_and_non_records_are_bad():
    lines = [{"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
             {"type": "progress", "sessionId": SID, "data": {}},
             {"type": "permission-mode", "sessionId": SID, "permissionMode": "plan"},
             {"type": "some-future-record", "sessionId": SID},
             42, "text", [1], None, {"silly": "this"}, {"type": 7}]
    drafts, bad = _parse(lines)
    assert drafts == []
    assert [b.line for b in bad] == [5, 6, 7, 8, 9, 10]


def test_sidechain_lines_carry_flags_and_do_not_move_the_main_turn():
    side = {"isSidechain": True, "agentId": "ag1"}
    lines = [_user("u1", "refactor the parser"),
             _assistant("a1", "msg_1", _use("toolu_task", "Task", {"prompt": "find parsers"})),
             {**_user("s1", "find parsers"), **side},
             {"type": "progress", "sessionId": SID, "uuid": "p1", "parentUuid": "s1", **side, "data": {}},
             {**_assistant("s2", "msg_s", _text("found 3")), **side, "parentUuid": "p1", "agentId": "other"},
             _user("u2", [_result("toolu_task", "found 3")]),
             _assistant("a2", "msg_2", _text("Three parsers."))]
    drafts, _ = _parse(lines)
    got = [(d.uuid, d.turn_id.rsplit("/", 1)[1], d.meta) for d in drafts]
    model = {"model": "claude-sonnet-4-5"}
    flags = {"sidechain": True, "agent_id": "ag1"}
    assert got == [("u1", "u1", None), ("a1", "u1", model), ("s1", "s1", flags),
                   ("s2", "s1", {"sidechain": True, "agent_id": "other", **model}),        # found through its parent
                   ("u2", "u1", None), ("a2", "u1", model)]


def test_reused_or_missing_uuids_fall_back_to_the_line():
    lines = [_user("dup", "first"), _user("dup", "second"), {**_user("x", "third"), "uuid": None}]
    drafts, _ = _parse(lines)
    digest = content_digest(lines[2])                  # no uuid: the line and what it holds
    assert [_k(d.key) for d in drafts] == [f"cc/{SID}/dup/0", f"cc/{SID}/dup@2/0", f"cc/{SID}/L@3~{digest}/0"]
    assert [d.turn_id for d in drafts] == [f"{SID}/dup", f"{SID}/dup@2", f"{SID}/L@3~{digest}"]


def test_session_comes_from_the_override_the_file_or_a_derivation():
    summary = {"type": "summary", "summary": "Earlier work", "leafUuid": "u0"}
    drafts, _ = _parse([summary, _user("u1", "hi")])
    assert {d.session_id for d in drafts} == {SID}                     # a leading summary joins the file's session
    drafts, _ = _parse([summary, _user("u1", "hi")], session="mine")
    assert {d.session_id for d in drafts} == {"mine"} and all(d.key.startswith("cc/mine/") for d in drafts)
    line = {k: v for k, v in _user("u1", "hi").items() if k != "sessionId"}
    a, _ = _parse([line], source_id="/logs/a.jsonl")
    b, _ = _parse([line], source_id="/logs/b.jsonl")
    assert a[0].session_id.startswith("a-") and b[0].session_id.startswith("b-") and a[0].session_id != b[0].session_id
    assert a == _parse([line], source_id="/logs/a.jsonl")[0]


# ---------------------------------------------------------------- the repo's sample session

def test_sample_session_counts(samples):
    drafts, bad = parse_file(claude_code, samples / "claude-code" / "demo-session.jsonl")
    merged = merge_adjacent(drafts)
    kinds = [d.kind for d in merged]
    assert not bad
    assert {d.session_id for d in drafts} == {"5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"}
    assert (kinds.count("user"), kinds.count("assistant"), kinds.count("tool_call"), kinds.count("tool_result"),
            kinds.count("system")) == (2, 3, 4, 4, 1)
    calls = {d.tool["call_id"]: d.tool["name"] for d in merged if d.kind == "tool_call"}
    assert {d.tool["call_id"]: d.tool["name"] for d in merged if d.kind == "tool_result"} == calls
    first = next(d for d in merged if d.kind == "assistant")
    assert first.text.startswith("<thinking>\n") and first.text.endswith("what changed in it.")
    assert len(first.all_keys()) == 2
    assert len({d.turn_id for d in merged}) == 3                        # before the first user line, then two turns
    results = " ".join(d.text for d in merged if d.kind == "tool_result")
    assert "9f2c4e1a7b3d5f60812ab4c9d0e7f3a2b1c4d5e6" in results and "/srv/app/config/payments.yaml" in results


def test_a_uuid_names_a_line_only_together_with_what_it_says():
    # Fixture sets reuse a session's uuids for other content in other files:
    # both are kept. A verbatim copy of a line (written again, or relayed) is
    # still one line, whatever metadata around the message differs.
    first, _ = _parse([_user("u1", "run the migration")])
    other, _ = _parse([_user("u1", "roll the migration back")])
    copy, _ = _parse([{**_user("u1", "run the migration"), "cwd": "/elsewhere", "version": "2.1.3"}])
    assert first[0].key != other[0].key
    assert first[0].key == copy[0].key
