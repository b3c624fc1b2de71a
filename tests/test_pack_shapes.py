"""Push packs for session shapes the real transcripts rarely hold: each one
renders within budget in every format a client sends, keeps its pairs, and
names what it leaves out (tests/pack_checks.py)."""
from __future__ import annotations

import json
import re

from reducers.pack_formats import to_anthropic
from reducers.pack_messages import MESSAGE_OVERHEAD
from reducers.tokens import count_tokens
from stores.context import compact, push_pack
from stores.store import Store
from tests.helpers import cli
from tests.pack_checks import anthropic_tokens, check_pack, needed_budget

WORDS = "parser cache index budget marker token render session eviction schema deploy kernel socket".split()


def _prose(n: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(n))


def _ingest(tmp_path, name: str, messages: list[dict]) -> list[dict]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(messages))
    assert cli("ingest", str(path), "--session", name).code == 0
    return [e for e in Store().events() if e["session_id"] == name]


def test_a_session_that_opens_with_the_assistant_fits_its_budget_as_an_anthropic_request(tmp_path):
    # Anthropic wants a user message first: the line the pack opens with is
    # counted like any other message, so the request stays within budget.
    events = _ingest(tmp_path, "monologue", [{"role": "assistant", "content": _prose(100, k)} for k in range(60)])
    for budget in range(900, 2201, 7):     # near-full packs, where the few tokens tell
        result = push_pack(Store(), "monologue", budget=budget)
        body = to_anthropic(result.pack)
        assert body["messages"][0]["role"] == "user"
        assert anthropic_tokens(body) <= budget, (budget, anthropic_tokens(body))
        check_pack(result, events, budget)


def test_the_minimum_a_too_small_budget_names_is_one_that_renders(tmp_path):
    # A small budget reads a short tail: here only the long last reply, not
    # the pair before it that the smallest pack must keep. The minimum named
    # is settled on a read of its own size, so rendering at it succeeds.
    _ingest(tmp_path, "tail", [
        {"role": "system", "content": _prose(3000, 1)},
        {"role": "user", "content": "check the schema and report"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "ls"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": _prose(400, 2)},
        {"role": "assistant", "content": _prose(2500, 3)},
    ])
    for budget in (300, 1000):
        run = cli("context", "--session", "tail", "--budget", str(budget))
        need = needed_budget(run.err)
        assert run.code == 1 and need and need > budget, run.err
        again = cli("context", "--session", "tail", "--budget", str(need))
        assert again.code == 0, again.err
        assert again.lines()[0]["tokens"] <= need


def test_a_reused_call_id_is_sent_once_each_call_with_its_own_result(tmp_path):
    # Replays reuse one recorded id for each step, and a sub-agent's file can
    # repeat its parent's calls: in the pack each call goes with an id of
    # its own, and its result with that same id.
    messages = [{"role": "user", "content": "run the three checks"}]
    for step, output in enumerate(["first output", "second output", "third output"]):
        messages += [{"role": "assistant", "content": f"step {step}", "tool_calls": [
                         {"id": "call_same", "type": "function",
                          "function": {"name": "shell", "arguments": json.dumps({"cmd": f"check {step}"})}}]},
                     {"role": "tool", "tool_call_id": "call_same", "content": output}]
    messages.append({"role": "assistant", "content": "all three ran"})
    events = _ingest(tmp_path, "reused", messages)
    result = push_pack(Store(), "reused", budget=4000)
    check_pack(result, events, 4000)
    body = to_anthropic(result.pack)
    uses = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    answers = [(b["tool_use_id"], b["content"]) for m in body["messages"] for b in m["content"]
               if b["type"] == "tool_result"]
    assert len(uses) == 3 == len(set(uses))
    assert answers == list(zip(uses, ["first output", "second output", "third output"]))


def test_a_cut_below_the_ingest_preview_names_the_whole_output_not_the_preview(tmp_path):
    # Big output is kept as an artifact with a ~500-token preview. Cut to
    # less than that, the pack's stub is rebuilt from the output itself: one
    # header with its real line count, and a marker naming what it really left out.
    rows = "\n".join(f"row {i}: value {i * 7}" for i in range(3000))
    _ingest(tmp_path, "dump", [
        {"role": "user", "content": "dump the table"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "dump", "type": "function", "function": {"name": "sql", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "dump", "content": rows},
        {"role": "assistant", "content": "done"}])
    whole = count_tokens(rows)
    for cap in (120, 300):
        pack = cli("context", "--session", "dump", "--budget", "8000", "--tool-max-tokens", str(cap)).lines()[0]
        text = next(m["content"] for m in pack["messages"] if m["role"] == "tool")
        assert count_tokens(text) <= cap
        assert text.count("Total output lines:") == 1 and text.startswith("Total output lines: 3000\n")
        cut = int(re.search(r"…(\d+) tokens truncated…", text).group(1))
        assert whole - cap <= cut < whole, (cut, whole)
        assert "row 0: value 0" in text and "row 2999: value 20993" in text


def _cc_line(sid: str, n: int, kind: str, content, **extra) -> dict:
    return {"type": kind, "sessionId": sid, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None,
            "timestamp": f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.000Z", "isSidechain": False,
            "message": {"role": kind, "content": content}, **extra}


def _compacted_by_its_runtime(tmp_path, rounds: int = 5) -> tuple[str, list[dict]]:
    """A long Claude Code session its runtime compacted `rounds` times, with
    hook reminders on the way."""
    sid, lines, n = "c0ffee00-0000-4000-8000-000000000001", [], 0
    for round_ in range(rounds):
        lines.append(_cc_line(sid, n, "user", f"Summary {round_}: " + _prose(1500, round_), isCompactSummary=True))
        lines.append(_cc_line(sid, n + 1, "user", "<system-reminder>hook note " + _prose(80, round_) + "</system-reminder>",
                              isMeta=True))
        lines.append(_cc_line(sid, n + 2, "user", f"question {round_}: " + _prose(30, round_)))
        lines.append(_cc_line(sid, n + 3, "assistant", [{"type": "text", "text": _prose(200, round_)}]))
        n += 4
    path = tmp_path / f"{sid}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert cli("ingest", str(path)).code == 0
    return sid, [e for e in Store().events() if e["session_id"] == sid]


def test_runtime_notices_that_pile_up_do_not_outgrow_the_budget(tmp_path):
    # Pinned whole, the system part outgrew any budget under ~8,000 tokens.
    # The newest notices up to the notes cap are shown; the older ones are
    # named by the pack's pointer.
    sid, events = _compacted_by_its_runtime(tmp_path)
    for budget in (4000, 8000):
        result = push_pack(Store(), sid, budget=budget)
        system = [m for m in result.pack.messages if m.part == "system"]
        assert system and sum(m.tokens for m in system) <= 2000 + MESSAGE_OVERHEAD
        check_pack(result, events, budget)


def test_compaction_evicts_the_runtime_notices_a_pack_would_not_show(tmp_path):
    sid, events = _compacted_by_its_runtime(tmp_path)
    summaries = [e["seq"] for e in events if (e.get("meta") or {}).get("subtype") == "compact_summary"]
    done = compact(Store(), sid, budget=3500, hot_tail=1, reflect=False)
    assert done.fits, done.stopped
    evicted = {s for m in done.new_markers for a, z in m["ranges"] for s in range(a, z + 1)}
    assert set(summaries[:-1]) <= evicted and summaries[-1] not in evicted
    after = [e for e in Store().events() if e["session_id"] == sid]
    check_pack(push_pack(Store(), sid, budget=3500), after, 3500)


def test_the_newest_copy_of_standing_instructions_is_shown_whole(tmp_path):
    # Codex writes its AGENTS.md instructions again on every resume: the
    # newest copy is the live one and goes whole; older copies are history.
    sid, lines = "0199aaaa-0000-7000-8000-000000000002", []
    lines.append({"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
                  "payload": {"id": sid, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w", "cli_version": "0.58.0"}})
    for k in range(3):
        ts = f"2026-03-01T10:{k:02d}:30.000Z"
        lines.append({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<user_instructions>\nrevision {k}: " + _prose(2600, k) + "\n</user_instructions>"}]}})
        lines.append({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"task {k}: " + _prose(20, k)}]}})
        lines.append({"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": _prose(60, k)}]}})
    path = tmp_path / f"rollout-2026-03-01T10-00-00-{sid}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert cli("ingest", str(path)).code == 0
    events = [e for e in Store().events() if e["session_id"] == sid]
    copies = [e for e in events if (e.get("meta") or {}).get("subtype") == "user_instructions"]
    assert len(copies) == 3
    result = push_pack(Store(), sid, budget=8000)
    system = next(m for m in result.pack.messages if m.part == "system")
    assert copies[-1]["text"] in system.content and "revision 0" not in system.content
    check_pack(result, events, 8000)
