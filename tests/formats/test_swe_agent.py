"""SWE-agent trajectories: the history is chat messages, except where the
agent acts through text. Then each assistant `action` is a tool call and the
`user` message after it is that call's output, not the user speaking."""
from __future__ import annotations

from reducers.drafts import Draft, ParseContext
from reducers.formats import openai


def _drafts(doc: dict) -> list[Draft]:
    items = openai.parse([(1, doc)], ParseContext(path="run.traj", source_id="/runs/run.traj"))
    return [d for d in items if isinstance(d, Draft)]


def _text_acting_trajectory() -> dict:
    return {
        "environment": "swe_main",
        "history": [
            {"role": "system", "content": "You are an autonomous programmer.", "agent": "primary"},
            {"role": "user", "content": "Here is a demonstration: fix a typo in util.py", "is_demo": True,
             "agent": "primary"},
            {"role": "user", "content": "Fix the off-by-one error in pager.py", "agent": "primary"},
            {"role": "assistant", "content": "Let me look around.\n```\nls -a\n```", "thought": "Let me look around.\n",
             "action": "ls -a\n", "agent": "primary"},
            {"role": "user", "content": "pager.py\nREADME.md\n(Open file: n/a)\nbash-$", "agent": "primary"},
            {"role": "assistant", "content": "Done, submitting.\n```\nsubmit\n```", "thought": "Done, submitting.",
             "action": "submit\n", "agent": "primary"},
        ],
        "info": {"exit_status": "submitted", "submission": "diff --git a/pager.py b/pager.py\n-    n - 1\n+    n\n"},
    }


def test_a_text_action_is_a_tool_call_and_the_next_user_message_its_output():
    drafts = _drafts(_text_acting_trajectory())
    assert [(d.kind, d.text.splitlines()[0] if d.text else "") for d in drafts] == [
        ("system", "You are an autonomous programmer."),
        ("user", "Here is a demonstration: fix a typo in util.py"),
        ("user", "Fix the off-by-one error in pager.py"),
        ("assistant", "Let me look around."),
        ("tool_call", "ls -a"),
        ("tool_result", "pager.py"),
        ("assistant", "Done, submitting."),
        ("tool_call", "submit"),
        ("tool_result", "diff --git a/pager.py b/pager.py"),
    ]
    calls = [d for d in drafts if d.kind == "tool_call"]
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [c.tool["call_id"] for c in calls] == [r.tool["call_id"] for r in results]
    assert [c.tool["name"] for c in calls] == ["ls", "submit"]
    assert calls[0].text == "ls -a\n"                      # the command, verbatim


def test_the_demonstration_stays_a_user_message_marked_as_one():
    drafts = _drafts(_text_acting_trajectory())
    assert [d.meta for d in drafts[1:3]] == [{"demonstration": True}, None]
    assert len({d.turn_id for d in drafts[2:]}) == 1       # the task's turn holds the whole run


def test_a_thought_that_repeats_the_visible_text_is_not_stored_twice():
    drafts = _drafts(_text_acting_trajectory())
    assert not any((d.meta or {}).get("thinking") for d in drafts)


def test_the_submitted_patch_without_a_submit_action_is_a_system_event():
    doc = _text_acting_trajectory()
    doc["history"] = doc["history"][:5]                     # the submit step is only in `trajectory`
    drafts = _drafts(doc)
    assert (drafts[-1].kind, drafts[-1].meta) == ("system", {"subtype": "submission", "exit_status": "submitted"})
    assert drafts[-1].text.startswith("diff --git")


def test_function_calling_trajectories_pair_calls_by_id_and_ignore_action():
    doc = {"history": [
        {"role": "user", "content": "Fix it", "message_type": "observation"},
        {"role": "assistant", "content": "Searching.", "thought": "Searching.", "action": "find_file x.py",
         "message_type": "action",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "find_file", "arguments": "{\"file_name\": \"x.py\"}"}}]},
        {"role": "tool", "content": "Found 1 match", "tool_call_ids": ["call_1"], "message_type": "observation"},
        {"role": "user", "content": "Now run the tests", "message_type": "observation"},
    ]}
    drafts = _drafts(doc)
    assert [d.kind for d in drafts] == ["user", "assistant", "tool_call", "tool_result", "user"]
    assert drafts[3].tool["call_id"] == "call_1"


def _mini(messages: list, fmt: str = "mini-swe-agent-1") -> dict:
    return {"trajectory_format": fmt, "info": {"exit_status": "Submitted", "submission": "diff --git a/x b/x\n"},
            "messages": messages}


def test_mini_swe_agent_bash_blocks_are_calls_and_returncode_messages_their_output():
    drafts = _drafts(_mini([
        {"role": "system", "content": "You can run shell commands."},
        {"role": "user", "content": "<pr_description>Fix x</pr_description>"},
        {"role": "assistant", "content": "THOUGHT: look first.\n\n```bash\nls /testbed\n```"},
        {"role": "user", "content": "<returncode>2</returncode>\n<output>\nls: cannot access\n</output>"},
    ]))
    assert [d.kind for d in drafts] == ["system", "user", "assistant", "tool_call", "tool_result", "system"]
    call, result = drafts[3], drafts[4]
    assert (call.text, call.tool["name"]) == ("ls /testbed\n", "bash")
    assert result.tool["call_id"] == call.tool["call_id"]
    assert result.tool["is_error"] is True and result.meta["exit_code"] == 2


def test_a_bash_block_in_an_ordinary_chat_is_just_text():
    items = openai.parse([(1, {"messages": [
        {"role": "user", "content": "how do I list files?"},
        {"role": "assistant", "content": "Run:\n```bash\nls\n```"},
        {"role": "user", "content": "thanks"}]})], ParseContext(path="c.jsonl", source_id="/c.jsonl"))
    assert [d.kind for d in items if isinstance(d, Draft)] == ["user", "assistant", "user"]


def test_mini_swe_agent_exit_message_ends_the_run_once_with_its_timestamps_kept():
    drafts = _drafts(_mini([
        {"role": "user", "content": "Fix x"},
        {"role": "assistant", "content": "Submitting.", "extra": {"timestamp": 1780680349.44},
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "bash", "arguments": "{\"command\": \"echo COMPLETE\"}"}}]},
        {"role": "exit", "content": "diff --git a/x b/x\n", "extra": {"exit_status": "Submitted"}},
    ], fmt="mini-swe-agent-1.1"))
    assert [d.kind for d in drafts] == ["user", "assistant", "tool_call", "system"]
    assert drafts[-1].meta == {"subtype": "exit", "exit_status": "Submitted"}      # no second submission event
    assert drafts[1].ts == "2026-06-05T17:25:49.440Z"


def test_a_submission_already_shown_as_the_submit_calls_output_is_not_stored_again():
    patch = "diff --git a/x.py b/x.py\n-a\n+b\n"
    doc = {"history": [
        {"role": "user", "content": "Fix x", "message_type": "observation"},
        {"role": "assistant", "content": "Submitting.", "action": "submit", "message_type": "action",
         "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]},
        {"role": "tool", "content": "\n" + patch + "\n", "tool_call_ids": ["call_9"], "message_type": "observation"},
    ], "info": {"exit_status": "submitted", "submission": patch}}
    drafts = _drafts(doc)
    assert [d.kind for d in drafts] == ["user", "assistant", "tool_call", "tool_result"]


def test_a_submission_printed_by_an_earlier_command_is_still_the_submit_calls_output():
    # The last observation printed the flag, but it answered `python`, not `submit`:
    # the submit call has no observation of its own and takes the submission.
    doc = {"history": [
        {"role": "user", "content": "Find the flag"},
        {"role": "assistant", "content": "Run it.\n```\npython exploit.py\n```", "action": "python exploit.py\n"},
        {"role": "user", "content": "FLAG{WARM_UP}\n(Open file: n/a)\nbash-$"},
        {"role": "assistant", "content": "Submitting.\n```\nsubmit FLAG{WARM_UP}\n```", "action": "submit FLAG{WARM_UP}\n"},
    ], "info": {"exit_status": "submitted", "submission": "\nFLAG{WARM_UP}\n"}}
    drafts = _drafts(doc)
    assert [d.kind for d in drafts] == ["user", "assistant", "tool_call", "tool_result",
                                        "assistant", "tool_call", "tool_result"]
    submit_call, result = drafts[5], drafts[6]
    assert result.tool["call_id"] == submit_call.tool["call_id"]
    assert result.meta == {"subtype": "submission", "exit_status": "submitted"}
    assert result.text == "\nFLAG{WARM_UP}\n"
