"""The pure parts of context anatomy: how text is told apart into slices,
topics, windows, usage, the timeline."""
from __future__ import annotations

import pytest

from reducers.anatomy.decompose import NotARequest, decompose, request_bodies, request_hash
from reducers.anatomy.slices import carve
from reducers.anatomy.timeline import event_changes, in_call_order, sparkline
from reducers.anatomy.topics import message_terms, next_topic
from reducers.anatomy.usage import normalise
from reducers.anatomy.model_windows import known_window


def _bytes(text: str) -> int:
    return len(text.encode())


def test_plain_text_stays_in_its_container():
    c = carve("just a question about the build", "user")
    assert c.bytes == {"user": _bytes("just a question about the build")} and not c.found


def test_a_workspace_file_inside_a_reminder_is_workspace_and_the_rest_is_reminder():
    file = "Contents of /home/me/app/AGENTS.md (project instructions):\n\nUse pnpm.\n"
    text = f"before\n<system-reminder>\nContext:\n{file}</system-reminder>\nafter"
    c = carve(text, "user")
    assert c.bytes["workspace"] == _bytes(file)
    assert c.bytes["reminders"] == _bytes("<system-reminder>\nContext:\n") + _bytes("</system-reminder>")
    assert c.bytes["user"] == _bytes("before\n") + _bytes("\nafter")
    assert sum(c.bytes.values()) == _bytes(text)
    assert [f["what"] for f in c.found] == ["system-reminder", "AGENTS.md"]


def test_two_workspace_files_in_a_row_are_each_recognised():
    text = ("Contents of /a/CLAUDE.md (user's private global instructions):\n\nA\n"
            "Contents of /a/b/CLAUDE.md (project instructions):\n\nB\n")
    c = carve(text, "system")
    assert c.bytes == {"workspace": _bytes(text)}
    assert [f["path"] for f in c.found] == ["/a/CLAUDE.md", "/a/b/CLAUDE.md"]


def test_codex_agents_md_skills_markers_and_recalled_blocks():
    agents = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nRun cargo test.\n</INSTRUCTIONS>"
    skill = '<skill name="deploy">Ship it with make deploy.</skill>'
    marker = ('[Events 12–40 (09:00–09:30) evicted: 29 events. Topics: docker, ssl. '
              'Use recall("docker ssl") or trace show 12..40.]')
    recalled = '<recalled-context source="trace">\nold fact\n</recalled-context>'
    text = "\n".join([agents, skill, marker, recalled, "tail"])
    c = carve(text, "history")
    assert c.bytes["workspace"] == _bytes(agents)
    assert c.bytes["skills"] == _bytes(skill)
    assert c.bytes["markers"] == _bytes(marker)
    assert c.bytes["recalled"] == _bytes(recalled)
    assert c.bytes["history"] == _bytes("\n") * 4 + _bytes("tail")
    assert {f.get("name") for f in c.found if f["slice"] == "skills"} == {"deploy"}


def test_a_claude_code_skill_body_is_a_skill_and_an_unclosed_block_runs_to_the_end():
    body = "Base directory for this skill: /skills/pdf\n\nUse pdftotext."
    assert carve(body, "user").bytes == {"skills": _bytes(body)}
    open_block = "intro <system-reminder>never closed"
    assert carve(open_block, "user").bytes == {"user": _bytes("intro "), "reminders": _bytes("<system-reminder>never closed")}


def test_bodies_in_records_and_what_is_no_body():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert list(request_bodies([body, body])) == [body, body]
    assert list(request_bodies({"custom_id": "x", "params": body})) == [body]
    assert list(request_bodies({"request": {"url": "https://x/telemetry", "body": {}}, "response": {}})) == [None]
    for bad in ({"model": "m", "prompt": "hi"}, "text", [], 3):
        with pytest.raises(NotARequest):
            list(request_bodies(bad))


def test_the_request_hash_ignores_what_came_back_and_key_order():
    a = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    b = {"messages": [{"content": "hi", "role": "user"}], "model": "m", "response": {"content": "yo"}}
    assert request_hash(a) == request_hash(b)
    assert request_hash(a) != request_hash({**a, "model": "n"})


def test_media_count_no_bytes_and_tool_results_of_blocks_are_results():
    body = {"model": "claude-sonnet-4-5", "messages": [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "AAAA"}},
                                     {"type": "text", "text": "what is this?"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "zoom", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": [{"type": "text", "text": "a cat"}]}]}]}
    a = decompose(body)
    assert a.media_blocks == 1 and a.user_bytes == _bytes("what is this?")
    assert a.slices["tool_results"]["bytes"] == _bytes("a cat")
    assert a.api == "anthropic-messages" and a.history_count == 3


def test_topics_are_deterministic_and_transitions_need_a_new_subject():
    assert message_terms("Please fix the flaky payments test, the payments suite fails") == \
        ["payments", "fix", "flaky", "test", "suite", "fails"]
    assert "sk" not in " ".join(message_terms("my key is sk-ant-api03-AAAABBBBCCCCDDDDEEEEFFFF0000 ok"))
    label, moved, state = next_topic(None, "Fix the flaky payments test", "d1")
    assert label == "fix flaky payments" and not moved
    label, moved, state = next_topic(state, "Fix the flaky payments test", "d1")      # the same request: no change
    assert not moved
    label, moved, state = next_topic(state, "ok", "d2")                               # nothing to go on
    assert not moved and label == "fix flaky payments"
    label, moved, state = next_topic(state, "The payments test still fails on CI", "d3")
    assert not moved and label.startswith("payments")
    label, moved, state = next_topic(state, "Draft release notes for version 2.4", "d4")
    assert moved and label == "draft release notes"


def test_windows_come_from_the_model_name_or_not_at_all():
    assert known_window("claude-sonnet-4-5-20250929") == 200_000
    assert known_window("anthropic/claude-3-5-sonnet-latest") == 200_000
    assert known_window("gpt-4o-2024-08-06") == 128_000
    assert known_window("openai/gpt-4.1-mini") == 1_047_576
    assert known_window("claude-sonnet-4-5[1m]") == 1_000_000
    for unknown in ("claude-sonnet-9", "acme-7b", "", None, "gpt-4o-ish"):
        assert known_window(unknown) is None


def test_usage_of_each_provider_counts_the_whole_prompt():
    assert normalise({"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 100,
                      "output_tokens": 7})["contextTokens"] == 113
    chat = normalise({"prompt_tokens": 50, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 20}})
    assert chat["contextTokens"] == 50 and chat["cacheReadTokens"] == 20 and chat["inputTokens"] == 30
    codex = normalise({"input_tokens": 2895, "cached_input_tokens": 2560, "output_tokens": 246,
                       "reasoning_output_tokens": 192, "total_tokens": 3141})
    assert codex["contextTokens"] == 2895 and codex["reasoningTokens"] == 192
    assert normalise({"output_tokens": 4}) is None and normalise("x") is None


def test_call_order_is_by_time_and_an_untimed_record_keeps_its_place():
    recs = [{"k": 1, "ts": "2026-01-01T00:00:05Z"}, {"k": 2, "ts": None}, {"k": 3, "ts": "2026-01-01T00:00:01Z"},
            {"k": 4, "ts": "[trimmed for fixture]"}]
    assert [r["k"] for r in in_call_order(recs)] == [3, 4, 1, 2]      # each untimed one stays after its predecessor


def test_sparkline_scales_and_squeezes():
    assert sparkline([0, 50, 100, None]) == "▁▅█ "
    assert sparkline([10] * 10 + [90] * 10, width=4) == "▁▁██"


def test_event_changes_say_why_an_event_left():
    a = [{"seq": s, "kind": "user", "text": f"e{s}"} for s in (1, 2, 3, 4)]
    marker = {"seq": 9, "id": "M", "kind": "marker", "text": "[Events 1–2 …]",
              "meta": {"marker": {"ranges": [[1, 2]], "cycle": 1}}}
    b = [marker, a[3]]
    changes = event_changes(a, b, left_out_b=[3], markers_b=[marker])
    why = {c["seq"]: c.get("reason") for c in changes if c["change"] == "left"}
    assert why == {1: "evicted", 2: "evicted", 3: "dropped to fit the budget"}
    assert [c["seq"] for c in changes if c["change"] == "entered"] == [9]


def test_topic_terms_leave_out_paths_urls_tags_and_file_names():
    terms = message_terms("<ide_selection>see src/payments/retry.py and https://ci.example/run/7 "
                          "then C:\\builds\\nightly, retry.py failing checkout")
    assert terms == ["failing", "checkout"]


def test_topic_terms_cost_time_in_proportion_to_a_long_unbroken_run():
    """A message of one long run with no space and no slash (CJK prose, a
    base64 blob) costs about four times a quarter of it, never the sixteen
    of a scan restarted at every character (20k characters took 5.7 s)."""
    import time

    def cpu(text: str) -> float:
        start = time.process_time()
        message_terms(text)
        return time.process_time() - start

    run = "中文日志" * 5000
    quarter = min(cpu(run[: len(run) // 4]) for _ in range(3))
    assert cpu(run) < 8 * quarter + 0.05
