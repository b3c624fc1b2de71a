"""Working state (continuity spec Tier 1): kept at ingest, one task_state
event per change, `trace state show`, the push pack carries the latest."""
from __future__ import annotations

from reducers.working_state import WorkingState, fold, render, request_text
from stores.store import Store
from stores.working_state import working_state
from tests.helpers import cli
from tests.sessions import ClaudeSession


def _agent_session(sid: str = "ws-1") -> ClaudeSession:
    s = ClaudeSession(sid)
    s.user("The checkout page times out after the deploy. Find what changed in the payments config.")
    s.tool("TodoWrite", {"todos": [{"content": "Read the payments config", "status": "in_progress"},
                                   {"content": "Lower the gateway timeout", "status": "pending"}]})
    s.tool("Read", {"file_path": "/srv/app/config/payments.yaml"}, "timeout: 30s")
    s.tool("Bash", {"command": "npm test"}, "FAIL checkout.spec.ts: expected 200, got 504", is_error=True)
    s.assistant("We decided to use the regional gateway for payments.")
    s.tool("Edit", {"file_path": "/srv/app/config/payments.yaml", "old_string": "timeout: 30s",
                    "new_string": "timeout: 5s"})
    s.tool("TodoWrite", {"todos": [{"content": "Read the payments config", "status": "completed"},
                                   {"content": "Lower the gateway timeout", "status": "in_progress"}]})
    return s


def test_the_fold_reads_task_steps_files_decisions_and_blockers():
    events = []
    seq = 0
    for line in _agent_session().lines:
        seq += 1
        msg = line["message"]
        if isinstance(msg["content"], str):
            events.append({"seq": seq, "kind": "user", "text": msg["content"]})
            continue
        block = msg["content"][0]
        if block["type"] == "text":
            events.append({"seq": seq, "kind": "assistant", "text": block["text"]})
        elif block["type"] == "tool_use":
            events.append({"seq": seq, "kind": "tool_call", "text": "",
                           "tool": {"name": block["name"], "call_id": block["id"], "input": block["input"]}})
        else:
            events.append({"seq": seq, "kind": "tool_result", "text": block["content"],
                           "tool": {"call_id": block["tool_use_id"], "is_error": block["is_error"]}})
    state = WorkingState()
    for e in events:
        fold(state, e)
    view = state.visible()
    assert view["current_task"].startswith("The checkout page times out")
    assert view["task_chain"] == ["Lower the gateway timeout"]
    assert view["completed"] == ["Read the payments config"]
    assert view["open_files"] == ["/srv/app/config/payments.yaml"]
    assert view["recent_decisions"] == ["We decided to use the regional gateway for payments."]
    assert len(view["blockers"]) == 1 and "504" in view["blockers"][0]
    # the same command succeeding later clears its blocker
    fold(state, {"seq": 99, "kind": "tool_call", "text": "", "tool": {"name": "Bash", "call_id": "x",
                                                                      "input": {"command": "npm test"}}})
    fold(state, {"seq": 100, "kind": "tool_result", "text": "all passed", "tool": {"call_id": "x"}})
    assert state.visible()["blockers"] == []
    # the whole state survives its JSON (the fold resumes from the log)
    again = WorkingState.from_json(state.as_json())
    assert again.as_json() == state.as_json() and render(again) == render(state)


def test_what_counts_as_a_request():
    assert request_text("ok") is None and request_text("thanks!") is None
    assert request_text("<command-name>/clear</command-name>") is None
    assert request_text("[Request interrupted by user]") is None
    assert request_text("Thanks! Now add a retry to the uploader.") == "Now add a retry to the uploader."
    ide = "# Context from my IDE setup:\n\n## Open tabs:\n- a.ts: src/a.ts\n\n## My request for Codex:\nrename foo to bar\n"
    assert request_text(ide) == "rename foo to bar"


def test_ingest_writes_a_task_state_when_the_state_changes_and_only_then(tmp_path):
    s = _agent_session()
    src = s.write(tmp_path / "s.jsonl", upto=6)
    store = Store(tmp_path / "store")
    (first,) = list(store.ingest([str(src)]))
    assert first.states == 1
    (again,) = list(store.ingest([str(src)]))
    assert again.states == 0 and again.added == 0               # nothing new, no new state
    s.write(src)                                                # the transcript grows
    (grown,) = list(store.ingest([str(src)]))
    assert grown.states == 1
    states = [e for e in store.events() if e["kind"] == "task_state"]
    assert len(states) == 2 and states[-1]["session_id"] == "ws-1"
    # folding on from the stored state gives what one ingest of the whole file gives
    whole = Store(tmp_path / "whole")
    list(whole.ingest([str(src)]))
    assert working_state(store, "ws-1")["state"] == working_state(whole, "ws-1")["state"]
    assert working_state(store, "ws-1")["state"]["task_chain"] == ["Lower the gateway timeout"]


def test_a_plain_chat_keeps_no_working_state_and_no_state_turns_it_off(tmp_path):
    chat = ClaudeSession("chat-only").user("What is the capital of France?").assistant("Paris.")
    store = Store(tmp_path / "store")
    (res,) = list(store.ingest([str(chat.write(tmp_path / "c.jsonl"))]))
    assert res.states == 0 and working_state(store, "chat-only") is None
    (res,) = list(store.ingest([str(_agent_session("off").write(tmp_path / "a.jsonl"))], working_state=False))
    assert res.states == 0 and working_state(store, "off") is None


def test_an_imported_export_brings_its_task_states_and_adds_none(tmp_path):
    src = _agent_session().write(tmp_path / "s.jsonl")
    assert cli("ingest", str(src)).code == 0
    exported = tmp_path / "export.jsonl"
    exported.write_text(cli("export").out)
    other = tmp_path / "other"
    (res,) = cli("--store", str(other), "ingest", str(exported)).lines()
    assert res["states"] == 0
    kinds = [e["kind"] for e in Store(other).events()]
    assert kinds.count("task_state") == 1
    shown = cli("--store", str(other), "state", "show", "--session", "ws-1", "--json").lines()[0]
    assert shown["state"]["open_files"] == ["/srv/app/config/payments.yaml"]


def test_state_show_and_its_exit_codes(tmp_path, trace_home):
    cli("ingest", str(_agent_session().write(tmp_path / "s.jsonl")))
    cli("ingest", str(ClaudeSession("chat").user("hello there friend").write(tmp_path / "c.jsonl")))
    shown = cli("state", "show", "--session", "ws-1", "--json")
    assert shown.code == 0
    data = shown.lines()[0]
    assert data["session_id"] == "ws-1" and data["text"].startswith("Current task: The checkout page")
    assert "Blockers: Bash npm test: FAIL checkout.spec.ts" in data["text"]
    assert cli("state", "show", "--session", "chat").code == 3           # known session, no state yet
    assert cli("state", "show", "--session", "nope").code == 1           # unknown session
    # state.db is derived: without it the state is found through the log's index
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (trace_home / name).unlink(missing_ok=True)
    assert cli("state", "show", "--session", "ws-1", "--json").lines()[0]["seq"] == data["seq"]


def test_the_push_pack_carries_the_latest_state_only(tmp_path):
    s = _agent_session()
    src = s.write(tmp_path / "s.jsonl", upto=4)
    cli("ingest", str(src))
    s.user("Now also bump the retry count on the gateway client.")
    s.tool("Edit", {"file_path": "/srv/app/gateway/client.ts", "old_string": "retries: 1", "new_string": "retries: 3"})
    s.write(src)
    cli("ingest", str(src))
    text = cli("context", "--session", "ws-1", "--budget", "4000", "--format", "text", "--no-recall").out
    assert text.count("## Task state") == 1
    assert "Current task: Now also bump the retry count" in text
    assert "client.ts" in text


def test_the_folder_a_search_looks_in_is_not_an_open_file_but_a_file_it_searches_is():
    state = WorkingState()
    calls = [("Glob", {"pattern": "**/payments*.yaml", "path": "/srv/app"}),
             ("Grep", {"pattern": "timeout", "path": "./.claude/commands"}),
             ("grep", {"pattern": "ORDER BY posted_at", "path": "src/ledger/reconcile.py"}),
             ("Read", {"file_path": "/srv/app/config/payments.yaml"})]
    for i, (name, data) in enumerate(calls):
        fold(state, {"seq": i, "kind": "tool_call", "text": "", "tool": {"name": name, "call_id": f"c{i}",
                                                                         "input": data}})
    assert state.visible()["open_files"] == ["/srv/app/config/payments.yaml", "src/ledger/reconcile.py"]


def test_a_rewind_withdraws_what_the_abandoned_branch_added_and_hand_made_roots_do_not_fork():
    def ev(seq, kind, uuid, parent, text="", **extra):
        return {"seq": seq, "kind": kind, "text": text, "source": {"uuid": uuid, "parent": parent}, **extra}
    read = {"name": "Read", "call_id": "r", "input": {"file_path": "/srv/zebra.py"}}
    edited = [ev(1, "user", "u1", "", "Draft the zebra release notes"), ev(2, "tool_call", "c1", "u1", tool=read),
              ev(3, "user", "u2", "", "Draft the otter release notes")]
    state = WorkingState()
    for e in edited:
        fold(state, e)
    assert state.visible()["task_chain"] == ["Draft the otter release notes"] and state.open_files == []
    # a ChatGPT branch the export marks as left is not folded
    fold(state, ev(4, "user", "x", "u2", "Draft the walrus release notes", meta={"branch": "alternate"}))
    assert state.current_task == "Draft the otter release notes"
    # every line a root, nothing following any: a line of prompts, no rewind
    flat = WorkingState()
    for e in [ev(1, "user", "u1", "", "Draft the zebra release notes"), ev(2, "user", "u2", "", "Draft the otter notes")]:
        fold(flat, e)
    assert flat.task_chain == ["Draft the zebra release notes", "Draft the otter notes"]
    # the fork's memory survives the state's JSON (the fold resumes from the log)
    again = WorkingState.from_json(state.as_json())
    fold(again, ev(5, "assistant", "a2", "u2", "Otter notes drafted"))
    fold(again, ev(6, "user", "u3", "", "Draft the heron release notes"))
    assert again.task_chain == ["Draft the heron release notes"]
