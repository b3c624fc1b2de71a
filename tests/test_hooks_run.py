"""`trace hooks run`: what the installed hook commands do with an agent's
payload. The command is taken from the settings file `trace hooks install`
wrote and run through a shell, as the agent would."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from stores.store import Store
from tests.helpers import cli, trace_events, transcript_events

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
CC_SESSION = "5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """HOME with TRACE's Claude Code hooks installed; returns {event: shell command}."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "claude-code",
               "--recall-on-prompt", "--min-score", "0.1").code == 0
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    return {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}


def _fire(command: str, payload) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(command, shell=True, input=data, capture_output=True, timeout=120)


def _payload(event: str, transcript: Path, **extra) -> dict:
    return {"session_id": CC_SESSION, "transcript_path": str(transcript), "cwd": "/srv/app",
            "hook_event_name": event, **extra}


def test_a_stop_payload_ingests_the_named_transcript_incrementally(installed, tmp_path):
    lines = (SAMPLES / "claude-code" / "demo-session.jsonl").read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"".join(lines[:8]))
    first = _fire(installed["Stop"], _payload("Stop", transcript))
    assert first.returncode == 0 and first.stdout == b""
    after_first = [e["source"]["key"] for e in transcript_events(tmp_path / "store")]
    assert after_first

    with open(transcript, "ab") as f:
        f.writelines(lines[8:])
    assert _fire(installed["SessionEnd"], _payload("SessionEnd", transcript, reason="exit")).returncode == 0
    after_second = [e["source"]["key"] for e in transcript_events(tmp_path / "store")]
    assert after_second[:len(after_first)] == after_first and len(after_second) > len(after_first)

    one_shot = tmp_path / "one-shot"
    assert cli("--store", str(one_shot), "ingest", "--no-embed", str(transcript)).code == 0
    assert len(after_second) == len(transcript_events(one_shot))
    assert _fire(installed["PreCompact"], _payload("PreCompact", transcript, trigger="auto")).returncode == 0
    assert [e["source"]["key"] for e in transcript_events(tmp_path / "store")] == after_second   # nothing new
    assert not (tmp_path / "store" / "hooks.log").exists()


def test_session_start_after_compaction_prints_hook_json_with_markers_and_notes(installed, tmp_path):
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", transcript)
    store_dir = tmp_path / "store"
    assert _fire(installed["PreCompact"], _payload("PreCompact", transcript, trigger="manual")).returncode == 0
    assert cli("--store", str(store_dir), "compact", "--session", CC_SESSION, "--budget", "600",
               "--hot-tail", "1").code == 0                 # a budget it can reach (below that it exits 1)
    note = {"id": "01M8AB" + "0" * 19 + "1", "seq": 1, "hash": "h", "kind": "note", "session_id": CC_SESSION,
            "text": "Decision: keep the payments timeout at 30s until the vendor fixes retries."}
    assert cli("--store", str(store_dir), "ingest", str(trace_events(tmp_path / "note.jsonl", [note]))).code == 0

    done = _fire(installed["SessionStart"], _payload("SessionStart", transcript, source="compact"))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = out["hookSpecificOutput"]["additionalContext"]
    marker = next(e for e in Store(store_dir).events() if e["kind"] == "marker")
    assert marker["text"] in context
    assert "keep the payments timeout at 30s" in context
    assert CC_SESSION in context and "recall" in context
    assert len(context) <= 10_000
    assert "Digest:" not in context and "Memory digest" not in context    # no sweep has run: no empty digest


def test_user_prompt_hook_adds_recalled_context_only_above_the_minimum_score(installed, tmp_path):
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", transcript)
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    asked = _fire(installed["UserPromptSubmit"],
                  _payload("UserPromptSubmit", transcript, prompt="which commit changed the payments timeout?"))
    assert asked.returncode == 0
    block = json.loads(asked.stdout)["hookSpecificOutput"]
    assert block["hookEventName"] == "UserPromptSubmit" and "recalled-context" in block["additionalContext"]
    strict = installed["UserPromptSubmit"].replace("--min-score 0.1", "--min-score 50")
    quiet = _fire(strict, _payload("UserPromptSubmit", transcript, prompt="which commit changed the payments timeout?"))
    assert quiet.returncode == 0 and quiet.stdout == b""


@pytest.mark.parametrize("payload, why", [
    (b"this is not json {", "payload is not JSON"),
    (b'["a list"]', "payload is not a JSON object"),
    (None, "is not a file"),
    (b"", "the payload is empty"),
    (b'{"session_id": "s", "transcript_path": 42}', "transcript_path is a number, not a path"),
    (b'{"session_id": "s"}', "payload names no transcript_path"),
])
def test_bad_payloads_are_logged_exit_0_and_write_nothing(installed, tmp_path, payload, why):
    if payload is None:
        payload = _payload("Stop", tmp_path / "gone.jsonl")
    done = _fire(installed["Stop"], payload)
    assert done.returncode == 0 and done.stdout == b""
    store_dir = tmp_path / "store"
    assert not (store_dir / "segments").exists()
    assert why in (store_dir / "hooks.log").read_text()


def test_a_busy_store_is_logged_and_left_for_the_next_run(installed, tmp_path):
    from stores.log.lock import WriterLock
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", transcript)
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    lock = WriterLock(store_dir).acquire(0)
    try:
        done = _fire(installed["Stop"], _payload("Stop", transcript))
    finally:
        lock.release()
    assert done.returncode == 0
    assert "store busy" in (store_dir / "hooks.log").read_text()
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    assert sum(1 for _ in Store(store_dir).events()) > 0


def test_codex_notify_finds_the_rollout_by_thread_id(tmp_path, monkeypatch):
    codex_home = tmp_path / "codex"
    day = codex_home / "sessions" / "2026" / "04" / "10"
    day.mkdir(parents=True)
    thread = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    shutil.copy(SAMPLES / "codex" / "rollout-demo.jsonl", day / f"rollout-2026-04-10T15-00-00-{thread}.jsonl")
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    notification = {"type": "agent-turn-complete", "thread-id": thread, "turn-id": "7", "cwd": "/home/dev",
                    "input-messages": ["fix the gateway port"], "last-assistant-message": "done"}
    run = cli("--store", str(tmp_path / "store"), "hooks", "run", "--agent", "codex", "notify",
              json.dumps(notification))
    assert run.code == 0
    events = list(Store(tmp_path / "store").events())
    assert events and {e["session_id"] for e in events} == {thread}


def test_session_start_without_a_readable_transcript_still_gives_back_what_the_store_holds(installed, tmp_path):
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", transcript)
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    transcript.unlink()                                        # moved or cleaned up by the agent
    done = _fire(installed["SessionStart"], _payload("SessionStart", transcript, source="compact"))
    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert CC_SESSION in context and "recall" in context
    assert "is not a file" in (tmp_path / "store" / "hooks.log").read_text()


def test_the_prompt_hooks_block_stays_within_the_agents_character_cap(tmp_path):
    # a run of spaces or dashes is one token for many characters: 1,500 tokens can pass 10,000 characters
    def table(part: int) -> str:
        return "\n".join(f"{'-' * 60} deploy step {part}.{i} {' ' * 60} status: ok {'=' * 60}" for i in range(20))
    messages = []
    for part in range(6):
        messages += [{"role": "user", "content": f"show part {part} of the deploy table"},
                     {"role": "assistant", "content": table(part)}]
    src = tmp_path / "wide.json"
    src.write_text(json.dumps(messages))
    store_dir = tmp_path / "store"
    assert cli("--store", str(store_dir), "ingest", "--no-embed", str(src)).code == 0
    payload = json.dumps({"session_id": "s", "prompt": "which deploy step status table?"})
    run = cli("--store", str(store_dir), "hooks", "run", "UserPromptSubmit", "--min-score", "0", payload)
    assert run.code == 0
    context = json.loads(run.out)["hookSpecificOutput"]["additionalContext"]
    assert "deploy step" in context and len(context) <= 10_000


@pytest.mark.parametrize("argv", [
    ["hooks", "run", "--agent", "claude-code", "Stop", "--an-option-a-later-trace-dropped"],
    ["--an-unknown-global", "hooks", "run", "Stop"],
    ["hooks", "run", "Stop", "{}", "one-argument-too-many"],
])
def test_a_hook_command_line_trace_cannot_parse_exits_0_so_the_agent_is_never_blocked(tmp_path, argv):
    # Claude Code reads exit 2 from a Stop, UserPromptSubmit or PreCompact hook as "block"
    run = cli("--store", str(tmp_path / "store"), *argv, stdin=b"{}")
    assert run.code == 0 and run.out == ""
    assert run.err.startswith("trace: error: ")               # still said, for the agent's debug log


def test_a_store_folder_named_hooks_does_not_hide_which_command_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                               # `--store hooks`: a folder, not the command
    run = cli("--store", "hooks", "hooks", "run", "Stop", "--an-option-a-later-trace-dropped", stdin=b"{}")
    assert run.code == 0 and run.err.startswith("trace: error: ")
    assert cli("--store", "hooks", "hooks", "install", "--agent", "nope").code == 2


def test_usage_errors_outside_hooks_run_keep_exit_2(tmp_path):
    assert cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "nope").code == 2
    assert cli("--store", str(tmp_path / "store"), "stats", "--no-such-option").code == 2


def _subagent_lines(agent_id: str, words: str) -> bytes:
    """A sub-agent's own transcript as Claude Code writes it: sidechain lines under the parent session."""
    common = {"isSidechain": True, "userType": "external", "cwd": "/srv/app", "sessionId": CC_SESSION,
              "version": "2.1.150", "agentId": agent_id}
    ask = {**common, "parentUuid": None, "type": "user", "uuid": f"{agent_id}-u1",
           "timestamp": "2026-03-02T09:14:30.000Z", "message": {"role": "user", "content": f"Search for {words}"}}
    answer = {**common, "parentUuid": f"{agent_id}-u1", "type": "assistant", "uuid": f"{agent_id}-a1",
              "timestamp": "2026-03-02T09:14:41.000Z",
              "message": {"id": f"msg_{agent_id}", "type": "message", "role": "assistant", "model": "claude-sonnet",
                          "content": [{"type": "text", "text": f"Found {words} in deploy/payments.yaml line 12"}]}}
    return b"".join(json.dumps(x).encode() + b"\n" for x in (ask, answer))


def test_stop_also_captures_the_sessions_subagent_transcripts(installed, tmp_path):
    transcript = tmp_path / "project" / f"{CC_SESSION}.jsonl"
    transcript.parent.mkdir()
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", transcript)
    subagents = transcript.parent / CC_SESSION / "subagents"
    subagents.mkdir(parents=True)
    (subagents / "agent-a1b2c3.jsonl").write_bytes(_subagent_lines("a1b2c3", "the retry budget"))
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    texts = [e.get("text", "") for e in Store(tmp_path / "store").events()]
    assert any("the retry budget in deploy/payments.yaml" in t for t in texts)

    later = tmp_path / "elsewhere" / "agent-d4e5f6.jsonl"      # SubagentStop names the one that finished
    later.parent.mkdir()
    later.write_bytes(_subagent_lines("d4e5f6", "the stale lock"))
    done = _fire(installed["Stop"], _payload("SubagentStop", transcript, agent_id="d4e5f6", agent_type="Explore",
                                             agent_transcript_path=str(later), stop_hook_active=False))
    assert done.returncode == 0 and done.stdout == b""
    hooked = sorted(e["source"]["key"] for e in transcript_events(tmp_path / "store"))
    one_shot = tmp_path / "one-shot"
    assert cli("--store", str(one_shot), "ingest", "--no-embed", str(transcript),
               str(subagents / "agent-a1b2c3.jsonl"), str(later)).code == 0
    assert hooked == sorted(e["source"]["key"] for e in transcript_events(one_shot))
    assert not (tmp_path / "store" / "hooks.log").exists()


def test_a_hook_before_the_transcript_names_its_session_leaves_the_leading_lines_for_the_next_run(installed, tmp_path):
    # A resumed session's file opens with summary lines that carry no sessionId; a hook can fire while
    # only they are complete. Taken then, they went into a session id made up from the file, and again
    # into the real session once the next line named it: captured twice, in two sessions.
    lines = (SAMPLES / "claude-code" / "demo-session.jsonl").read_bytes().splitlines(keepends=True)
    assert b'"sessionId"' not in lines[0] and b'"sessionId"' in lines[2]
    transcript = tmp_path / "project" / f"{CC_SESSION}.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes(lines[0] + lines[1] + lines[2][:40])        # the first session line half-written
    for event, extra in (("Stop", {"stop_hook_active": False}), ("PreCompact", {"trigger": "auto"})):
        assert _fire(installed[event], _payload(event, transcript, **extra)).returncode == 0
    with open(transcript, "ab") as f:
        f.write(lines[2][40:])
        f.writelines(lines[3:])
    assert _fire(installed["SessionEnd"], _payload("SessionEnd", transcript, reason="exit")).returncode == 0
    hooked = transcript_events(tmp_path / "store")
    assert {e["session_id"] for e in hooked} == {CC_SESSION}
    one_shot = tmp_path / "one-shot"
    assert cli("--store", str(one_shot), "ingest", "--no-embed", str(transcript)).code == 0
    assert [e["source"]["key"] for e in hooked] == [e["source"]["key"] for e in transcript_events(one_shot)]


def test_session_end_takes_a_transcript_that_never_names_its_session(installed, tmp_path):
    # the file is final: what it holds goes in, under a session made up from it, as a one-shot ingest does
    summary = (SAMPLES / "claude-code" / "demo-session.jsonl").read_bytes().splitlines(keepends=True)[0]
    transcript = tmp_path / "summary-only.jsonl"
    transcript.write_bytes(summary)
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    assert transcript_events(tmp_path / "store") == []                   # the session may be named next
    assert _fire(installed["SessionEnd"], _payload("SessionEnd", transcript, reason="exit")).returncode == 0
    one_shot = tmp_path / "one-shot"
    assert cli("--store", str(one_shot), "ingest", "--no-embed", str(transcript)).code == 0
    assert [(e["session_id"], e["text"]) for e in transcript_events(tmp_path / "store")] == \
        [(e["session_id"], e["text"]) for e in transcript_events(one_shot)] != []


@pytest.mark.parametrize("cut", [10, 200, -2], ids=["line-start", "mid-line", "all-but-its-newline"])
def test_a_hook_that_fires_mid_line_leaves_the_message_whole_for_the_next_run(installed, tmp_path, cut):
    # Lines 3-4 are a thinking block and a text block of one streamed message (one message.id): a one-shot
    # ingest makes one event of them. A hook that fires while line 4 is still being written must not take
    # line 3 as a message of its own and line 4, once complete, as another; nor lose or repeat line 4.
    lines = (SAMPLES / "claude-code" / "demo-session.jsonl").read_bytes().splitlines(keepends=True)
    blocks = [orjson.loads(lines[i])["message"] for i in (3, 4)]
    assert blocks[0]["id"] == blocks[1]["id"] and [b["content"][0]["type"] for b in blocks] == ["thinking", "text"]
    transcript = tmp_path / f"{CC_SESSION}.jsonl"
    transcript.write_bytes(b"".join(lines[:4]) + lines[4][:cut])
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    with open(transcript, "ab") as f:
        f.write(lines[4][cut:])
        f.writelines(lines[5:])
    assert _fire(installed["Stop"], _payload("Stop", transcript)).returncode == 0
    assert _fire(installed["SessionEnd"], _payload("SessionEnd", transcript, reason="exit")).returncode == 0
    one_shot = tmp_path / "one-shot"
    assert cli("--store", str(one_shot), "ingest", "--no-embed", str(transcript)).code == 0
    essence = lambda store: [(e["source"]["key"], e["kind"], e["text"]) for e in transcript_events(store)]
    assert essence(tmp_path / "store") == essence(one_shot)


@pytest.mark.parametrize("edit, why", [
    (lambda c: c.replace("--agent claude-code", "--agent claude"), "unknown --agent 'claude' in the hook command"),
    (lambda c: c.replace(" Stop", " Stopp"), "TRACE does nothing on a 'Stopp' hook"),
    (lambda c: c.replace("--agent claude-code", "--agent codex"), "no Codex rollout found for session " + CC_SESSION),
])
def test_a_hook_command_edited_by_hand_says_in_the_log_why_it_did_nothing(installed, tmp_path, edit, why):
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", transcript)
    payload = {"session_id": CC_SESSION, "hook_event_name": "Stop"}
    if "Codex" not in why:
        payload["transcript_path"] = str(transcript)
    done = _fire(edit(installed["Stop"]), payload)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert not (tmp_path / "store" / "segments").exists()
    logged = (tmp_path / "store" / "hooks.log").read_text().splitlines()
    assert len(logged) == 1 and why in logged[0]           # one line, no traceback
