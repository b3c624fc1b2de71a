"""Claude Code's session-state lines (last-prompt, pr-link, frame-link,
worktree-state, relocated, a session log's own `result`): kept once each as
`system` events with their fields, never counted as sent to the model; the
lines still skipped (UI bookkeeping) and the repeats are counted as
`ignored`; and a store built before these lines were kept takes a grown
transcript without doubling anything."""
from __future__ import annotations

import orjson

from reducers.anatomy.thread_window import sent_to_model
from reducers.drafts import Draft, ParseContext
from reducers.formats import claude_code
from stores.log.lookup import export_events
from stores.store import Store

SID = "5e6f7a8b-1c2d-4e3f-9a0b-c1d2e3f4a5b6"
PR_URL = "https://github.com/acme/widgets/pull/4242"


def _user(uuid: str, text: str, ts: str) -> dict:
    return {"type": "user", "sessionId": SID, "uuid": uuid, "parentUuid": None, "isSidechain": False,
            "timestamp": ts, "cwd": "/w/r", "message": {"role": "user", "content": text}}


def _assistant(uuid: str, mid: str, text: str, ts: str) -> dict:
    return {"type": "assistant", "sessionId": SID, "uuid": uuid, "parentUuid": None, "isSidechain": False,
            "timestamp": ts, "message": {"id": mid, "role": "assistant", "content": [{"type": "text", "text": text}]}}


def _pr(ts: str) -> dict:
    return {"type": "pr-link", "sessionId": SID, "prNumber": 4242, "prUrl": PR_URL,
            "prRepository": "acme/widgets", "timestamp": ts}


STATE = [
    _pr("2026-03-01T10:00:05Z"),
    {"type": "last-prompt", "lastPrompt": "open a PR for the flaky-test fix", "leafUuid": "a1", "sessionId": SID},
    {"type": "worktree-state", "sessionId": SID, "worktreeSession": {
        "originalCwd": "/w/r", "worktreePath": "/w/r/.claude/worktrees/fix-x", "worktreeName": "fix-x",
        "worktreeBranch": "fix/x", "originalBranch": "main", "originalHeadCommit": "3f9c2a1d", "sessionId": SID}},
    {"type": "frame-link", "sessionId": SID, "path": "/w/r/page.html",
     "frameUrl": "https://claude.ai/code/artifact/abc123", "title": "Preview", "timestamp": "2026-03-01T10:00:06Z"},
    {"type": "relocated", "sessionId": SID, "relocatedCwd": "/w/r/.claude/worktrees/fix-x"},
    {"type": "result", "key": "v2:k1", "agentId": "agent_1", "result": {"summary": "two tests were flaky"}},
]
BOOKKEEPING = [
    {"type": "permission-mode", "permissionMode": "default", "sessionId": SID},
    {"type": "mode", "mode": "normal", "sessionId": SID},
    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"messageId": "m", "trackedFileBackups": {}}},
    {"type": "last-prompt", "lastPrompt": None, "leafUuid": "a1", "sessionId": SID},
]


def _parse(lines: list) -> tuple[list[Draft], ParseContext]:
    ctx = ParseContext(path="/l/s.jsonl", source_id="/l/s.jsonl")
    items = list(claude_code.parse(list(enumerate(lines, 1)), ctx))
    return [d for d in items if isinstance(d, Draft)], ctx


def test_session_state_lines_are_system_events_with_their_fields():
    lines = [_user("u1", "open a PR for the flaky-test fix", "2026-03-01T10:00:00Z"),
             _assistant("a1", "m1", "Opened.", "2026-03-01T10:00:04Z"), *STATE]
    drafts, ctx = _parse(lines)
    state = {d.meta["subtype"]: d for d in drafts if d.kind == "system"}
    assert sorted(state) == ["frame-link", "last-prompt", "pr-link", "relocated", "result", "worktree-state"]
    assert PR_URL in state["pr-link"].text
    assert state["pr-link"].meta["fields"] == {"prNumber": 4242, "prUrl": PR_URL, "prRepository": "acme/widgets"}
    assert state["pr-link"].ts == "2026-03-01T10:00:05.000Z"
    assert state["last-prompt"].text == "open a PR for the flaky-test fix"
    assert state["last-prompt"].meta["fields"] == {"leafUuid": "a1"}
    assert state["result"].text == "two tests were flaky"
    assert state["result"].meta["fields"]["key"] == "v2:k1"
    assert "3f9c2a1d" in state["worktree-state"].text and "fix/x" in state["worktree-state"].text
    assert "https://claude.ai/code/artifact/abc123" in state["frame-link"].text
    assert all(d.session_id == SID for d in drafts)
    assert not any(sent_to_model(d.meta) for d in state.values())     # never part of a call's context
    assert ctx.ignored == 0


def test_bookkeeping_and_repeated_state_are_counted_as_ignored():
    lines = [_user("u1", "go", "2026-03-01T10:00:00Z"), *BOOKKEEPING,
             _pr("2026-03-01T10:00:05Z"), _pr("2026-03-01T11:30:00Z")]     # re-written on resume, new time
    drafts, ctx = _parse(lines)
    assert [d.meta["subtype"] for d in drafts if d.kind == "system"] == ["pr-link"]
    assert ctx.ignored == len(BOOKKEEPING) + 1


def _ingest(store: Store, path) -> dict:
    (result,) = store.ingest([str(path)], on_error=lambda msg: None)
    return result


def _events(store: Store) -> list[dict]:
    return list(export_events(store))


def test_the_ingest_result_counts_what_it_ignored(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [
        _user("u1", "go", "2026-03-01T10:00:00Z"), *BOOKKEEPING, *STATE, STATE[0]]))
    store = Store(tmp_path / "store")
    first = _ingest(store, src)
    assert (first.added, first.ignored, first.skipped) == (1 + len(STATE), len(BOOKKEEPING) + 1, 0)
    again = list(store.ingest([str(src)], recheck=True, on_error=lambda msg: None))[0]
    assert (again.added, again.skipped, again.ignored) == (0, 1 + len(STATE), len(BOOKKEEPING) + 1)
    assert first.to_dict()["ignored"] == len(BOOKKEEPING) + 1


def test_a_store_built_before_state_lines_were_kept_takes_the_grown_file_once(tmp_path, monkeypatch):
    head = [_user("u1", "open a PR", "2026-03-01T10:00:00Z"), _assistant("a1", "m1", "Opened.", "2026-03-01T10:00:04Z"),
            *BOOKKEEPING, *STATE]
    tail = [_user("u2", "now merge it", "2026-03-01T11:00:00Z"), _pr("2026-03-01T11:00:01Z"),
            {"type": "pr-link", "sessionId": SID, "prNumber": 4250, "prUrl": "https://github.com/acme/widgets/pull/4250",
             "prRepository": "acme/widgets", "timestamp": "2026-03-01T11:00:02Z"},
            _assistant("a2", "m2", "Merged.", "2026-03-01T11:00:05Z")]
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in head))
    old = Store(tmp_path / "old")
    with monkeypatch.context() as m:                     # the rules before: these lines made no event
        m.setattr(claude_code._Parser, "_session_state", lambda self, line, rec, sid: None)
        _ingest(old, src)
    assert [e["kind"] for e in _events(old)] == ["user", "assistant"]
    with src.open("ab") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in tail))
    _ingest(old, src)
    _ingest(old, src)
    got = _events(old)
    keys = [e["source"]["key"] for e in got]
    assert len(keys) == len(set(keys))
    conversation = [(e["kind"], e["text"]) for e in got if e["kind"] != "system"]
    assert conversation == [("user", "open a PR"), ("assistant", "Opened."),
                            ("user", "now merge it"), ("assistant", "Merged.")]
    fresh = Store(tmp_path / "fresh")
    _ingest(fresh, src)
    want = {e["source"]["key"]: e["text"] for e in _events(fresh)}
    # every event the upgraded store holds is one a fresh ingest makes, under the same key
    assert {e["source"]["key"]: e["text"] for e in got}.items() <= want.items()
    assert "https://github.com/acme/widgets/pull/4250" in "".join(e["text"] for e in got)


def test_the_push_pack_leaves_session_state_behind_its_pointer_and_recall_finds_it(tmp_path):
    # the last prompt would come back as a system line beside the user's own;
    # like every event a pack leaves out, they stay one `trace show` away
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [
        _user("u1", "open a PR for the flaky-test fix", "2026-03-01T10:00:00Z"),
        _assistant("a1", "m1", "Opened it.", "2026-03-01T10:00:04Z"), *STATE]))
    store = Store(tmp_path / "store")
    _ingest(store, src)
    text = store.context(SID, record=False).formatted("text")
    assert text.count("open a PR for the flaky-test fix") == 1
    assert PR_URL not in text and "Not in this pack: events 3–" in text
    assert any(PR_URL in (h.text or "") for h in store.recall(PR_URL, k=3))
