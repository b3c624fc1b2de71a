"""A conversation the user rewound (an edited prompt, a rewind to an
earlier point) is a tree in the source: the log keeps every branch, the
push pack shows only the live one (the branch that goes on to the newest
record) and its pointer names the abandoned events as such."""
from __future__ import annotations

import json

from reducers.branches import abandoned_seqs
from stores.context import push_pack
from stores.store import Store
from tests.helpers import cli
from tests.pack_checks import check_pack

_T = "2025-07-01T10:{:02d}:00.000Z"


def _line(kind: str, uuid: str, parent: str | None, minute: int, content, **extra) -> dict:
    rec = {"type": kind, "timestamp": _T.format(minute), "parentUuid": parent, "isSidechain": False,
           "sessionId": "rw", "uuid": uuid, **extra}
    if kind == "assistant":
        rec["message"] = {"id": extra.pop("mid", f"msg_{uuid}"), "role": "assistant", "content": content}
        rec.pop("mid", None)
    elif kind == "user":
        rec["message"] = {"role": "user", "content": content}
    return rec


def _text(t: str) -> list[dict]:
    return [{"type": "text", "text": t}]


def _use(uuid: str, parent: str, minute: int, call: str, name: str, given: dict) -> dict:
    return _line("assistant", uuid, parent, minute, [{"type": "tool_use", "id": call, "name": name, "input": given}])


def _result(uuid: str, parent: str, minute: int, call: str, text: str, **extra) -> dict:
    return _line("user", uuid, parent, minute, [{"type": "tool_result", "tool_use_id": call, "content": text, **extra}])


def _rewound_session() -> list[dict]:
    """Two attempts from one point: the first's answer streams over two
    lines (thinking, then text: one event), a progress line sits between
    records, and the first attempt went on for a second turn before the
    user went back."""
    return [
        _line("user", "u1", None, 0, _text("Start the migration plan")),
        _line("assistant", "a1", "u1", 1, _text("Ready to plan")),
        _line("user", "b1u", "a1", 2, _text("Use the zebra database engine")),
        _line("assistant", "b1t", "b1u", 3, [{"type": "thinking", "thinking": "zebra thoughts", "signature": "s"}],
              mid="m_b1"),
        _line("assistant", "b1a", "b1t", 3, _text("Zebra answer accepted"), mid="m_b1"),
        {"type": "progress", "uuid": "pg", "parentUuid": "b1a", "sessionId": "rw", "timestamp": _T.format(4),
         "data": {"type": "hook_progress"}},
        _line("user", "b1u2", "pg", 5, _text("Zebra follow-up question")),
        _line("assistant", "b1a2", "b1u2", 6, _text("Zebra follow-up answer")),
        _line("user", "b2u", "a1", 10, _text("Use the otter database engine")),
        _use("b2a", "b2u", 11, "t1", "Bash", {"command": "ls"}),
        _result("b2r", "b2a", 12, "t1", "otter.sql"),
        _line("assistant", "b2a2", "b2r", 13, _text("Otter plan ready")),
    ]


def _write(tmp_path, records: list[dict], name: str = "rw.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _events(session: str) -> list[dict]:
    return [e for e in Store().events() if e["session_id"] == session]


def test_the_pack_shows_the_live_branch_and_points_at_the_rewound_one(tmp_path):
    path = _write(tmp_path, _rewound_session())
    assert cli("ingest", str(path)).code == 0
    events = _events("rw")
    zebra = [e["seq"] for e in events if "ebra" in e["text"] and e["kind"] != "task_state"]
    assert len(zebra) == 4                                    # the log keeps the abandoned branch whole
    result = push_pack(Store(), "rw", budget=4000, recall=False)
    said = [m for m in result.to_dict()["messages"] if m["part"] not in ("markers", "task")]
    text = "\n".join(m["content"] or "" for m in said)
    assert "ebra" not in text
    assert "Use the otter database engine" in text and "Otter plan ready" in text and "Ready to plan" in text
    assert not set(zebra) & set(result.pack.event_seqs)
    assert "rewound branch" in result.pack.elision.text
    check_pack(result, events, 4000)                          # every left-out event reachable from the pointer
    hits = cli("recall", "zebra follow-up", "--mode", "fulltext").lines()
    assert any("Zebra follow-up" in h["text"] for h in hits)  # recall still finds the abandoned branch


def test_re_ingest_adds_nothing_and_the_pack_is_the_same(tmp_path):
    path = _write(tmp_path, _rewound_session())
    cli("ingest", str(path))
    before = push_pack(Store(), "rw", budget=4000, recall=False).pack.event_seqs
    again = cli("ingest", str(path), "--recheck", "--verbose").lines()[0]
    assert again["added"] == 0
    assert push_pack(Store(), "rw", budget=4000, recall=False).pack.event_seqs == before


def test_events_logged_without_their_parent_render_as_a_line_as_before(tmp_path, monkeypatch):
    """A store ingested before the parent was recorded (as this reader did
    then: no `source.parent`): nothing tells the branches apart, so nothing
    is left out for being on one."""
    from reducers.drafts import Draft
    from reducers.formats.claude_code_tree import Tree
    place = Tree.place

    def as_before(self, rec, at, made):
        for d in place(self, rec, at, made):
            if isinstance(d, Draft):
                d.parent = None
                (d.meta or {}).pop("rewinds", None)
        return made
    monkeypatch.setattr(Tree, "place", as_before)
    cli("ingest", str(_write(tmp_path, _rewound_session())))
    events = _events("rw")
    assert not any("parent" in e["source"] for e in events)
    pack = push_pack(Store(), "rw", budget=4000, recall=False).pack
    assert pack.elision is None and len(pack.event_seqs) == len(events)


def test_parallel_results_and_sub_agents_sharing_a_parent_are_no_rewind():
    def ev(seq, kind, uuid, parent, **meta):
        return {"seq": seq, "kind": kind, "source": {"uuid": uuid, "parent": parent}, "meta": meta}
    # two results answering calls of one message, written as children of the same line
    parallel = [ev(1, "user", "u", None), ev(2, "tool_call", "c", "u"), ev(3, "tool_result", "r1", "c"),
                ev(4, "tool_result", "r2", "c"), ev(5, "assistant", "a", "r2")]
    assert abandoned_seqs(parallel) == set()
    sidechain = [ev(1, "user", "u", None), ev(2, "assistant", "a", "u"), ev(3, "user", "s", "a", sidechain=True),
                 ev(4, "user", "u2", "a")]
    assert abandoned_seqs(sidechain) == set()
    edited = [ev(1, "user", "u", None), ev(2, "assistant", "a", "u"), ev(3, "user", "x", "a"),
              ev(4, "assistant", "xa", "x"), ev(5, "user", "y", "a"), ev(6, "assistant", "ya", "y")]
    assert abandoned_seqs(edited) == {3, 4}
    # the newest branch is the live one, whichever order its fork's children were logged in
    assert abandoned_seqs([*edited, ev(7, "user", "x2", "xa")]) == {5, 6}


def _pack_text(session: str) -> tuple[str, object]:
    result = push_pack(Store(), session, budget=4000, recall=False)
    said = [m for m in result.to_dict()["messages"] if m["part"] not in ("markers", "task")]
    return "\n".join(m["content"] or "" for m in said), result


def _node(nid, parent, children, role=None, words=None):
    """One node of a ChatGPT export's message tree."""
    message = None if role is None else {"id": nid, "author": {"role": role}, "create_time": 1740823200.0,
                                         "content": {"content_type": "text", "parts": [words]},
                                         "status": "finished_successfully", "recipient": "all"}
    return nid, {"id": nid, "message": message, "parent": parent, "children": children}


def test_a_chatgpt_export_packs_the_branch_its_current_node_ends(tmp_path):
    mapping = dict([_node("root", None, ["u1"]), _node("u1", "root", ["a1"], "user", "Plan the garden beds"),
                    _node("a1", "u1", ["u2", "u3"], "assistant", "Raised beds suit the plot"),
                    _node("u2", "a1", ["a2"], "user", "Plant walrus tomatoes"),
                    _node("a2", "u2", [], "assistant", "Walrus tomatoes need sun"),
                    _node("u3", "a1", ["a3"], "user", "Plant basil instead"),
                    _node("a3", "u3", [], "assistant", "Basil by the door")])
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"title": "Garden", "conversation_id": "garden-1", "current_node": "a3",
                                 "create_time": 1740823200.0, "mapping": mapping}]))
    assert cli("ingest", str(path)).code == 0
    (session,) = {e["session_id"] for e in Store().events()}
    events = _events(session)
    assert sum("alrus" in e["text"] for e in events if e["kind"] != "task_state") == 2   # kept in the log
    text, result = _pack_text(session)
    assert "alrus" not in text and "Plant basil instead" in text and "Raised beds" in text
    assert "rewound branch" in result.pack.elision.text
    check_pack(result, events, 4000)


def _gemini_rewound(tmp_path) -> None:
    """A Gemini CLI session whose user rewound over the walrus request."""
    def msg(mid, kind, words, minute):
        return {"id": mid, "timestamp": f"2026-06-14T08:{minute:02d}:00Z", "type": kind, "content": words}
    lines = [{"sessionId": "gem-1", "projectHash": "p", "startTime": "2026-06-14T08:00:00Z"},
             msg("m1", "user", "Name the backup bucket", 0), msg("m2", "gemini", "Bucket is nightly-archive", 1),
             msg("m3", "user", "Delete the walrus bucket", 2), msg("m4", "gemini", "Walrus bucket deleted", 3),
             {"$rewindTo": "m3"},
             msg("m5", "user", "Rotate the backup keys", 4), msg("m6", "gemini", "Keys rotated", 5)]
    path = tmp_path / "session-gem.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert cli("ingest", str(path)).code == 0


def test_a_gemini_rewind_leaves_the_withdrawn_messages_out_of_the_pack(tmp_path):
    _gemini_rewound(tmp_path)
    events = _events("gem-1")
    assert sum("alrus" in e["text"] for e in events if e["kind"] != "task_state") == 2
    text, result = _pack_text("gem-1")
    assert "alrus" not in text and "Rotate the backup keys" in text and "nightly-archive" in text
    check_pack(result, events, 4000)


def test_a_long_rewound_branch_stays_out_of_a_pack_that_reads_only_its_end(tmp_path):
    """The fork is far older than what a small pack reads: the rewinding
    prompt names the source lines it left, so the branch's end is known
    as abandoned too, and is read past for the live history before it."""
    records = [_line("user", "u0", None, 0, _text("Start planning the storage layout")),
               _line("assistant", "a0", "u0", 1, _text("Ready to plan the storage layout"))]
    prev = "a0"
    for t in range(25):                                   # about 6,500 tokens
        records += [_line("user", f"x{t}", prev, 2, _text(f"Zebra step {t}: " + "zebra words " * 60)),
                    _line("assistant", f"y{t}", f"x{t}", 3, _text(f"Zebra reply {t}: " + "zebra text " * 60))]
        prev = f"y{t}"
    records += [_line("user", "b1", "a0", 50, _text("Use the otter approach instead")),
                _line("assistant", "b2", "b1", 51, _text("Otter approach ready"))]
    cli("ingest", str(_write(tmp_path, records)))
    events = _events("rw")
    for budget in (600, 1500, 6000):
        result = push_pack(Store(), "rw", budget=budget, recall=False)
        said = [m for m in result.to_dict()["messages"] if m["part"] not in ("markers", "task")]
        assert not any("Zebra" in (m["content"] or "") for m in said), budget
        assert "Use the otter approach instead" in str(said)
        check_pack(result, events, budget)
    assert "Start planning the storage layout" in str(push_pack(Store(), "rw", budget=1500, recall=False)
                                                     .to_dict()["messages"])


def test_an_interrupted_call_is_no_rewind(tmp_path):
    """Claude Code writes an interrupted call's result and the interruption
    notice as two children of the call's line: neither is left out."""
    records = [_line("user", "u0", None, 0, _text("List the files")),
               _line("assistant", "c1", "u0", 1, [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                   "input": {"command": "ls"}}]),
               _line("user", "r1", "c1", 2, [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                              "content": "The user doesn't want to proceed with this tool use."}]),
               _line("user", "i1", "c1", 2, _text("[Request interrupted by user for tool use]")),
               _line("user", "u2", "i1", 3, _text("Try the docs folder")),
               _line("assistant", "a2", "u2", 4, _text("The docs folder holds two guides"))]
    cli("ingest", str(_write(tmp_path, records)))
    events = _events("rw")
    assert not any("rewinds" in (e.get("meta") or {}) for e in events)
    pack = push_pack(Store(), "rw", budget=4000, recall=False).pack
    assert pack.elision is None


def test_recall_in_the_pack_does_not_bring_back_an_evicted_rewound_branch(tmp_path):
    """Compaction evicts the abandoned attempt behind a marker; the pack's
    recalled-context block must not quote it back as this conversation's
    history (`trace recall` still finds it)."""
    from stores.context import compact
    records = [_line("user", "u0", None, 0, _text("Plan the database migration for billing")),
               _line("assistant", "a0", "u0", 1, _text("Ready to plan the billing migration"))]
    prev = "a0"
    for t in range(6):
        records += [_line("user", f"x{t}", prev, 2, _text(f"Migrate billing invoices with the zebra engine, step {t}")),
                    _line("assistant", f"y{t}", f"x{t}", 3, _text(f"Billing invoices moved by the zebra engine {t}"))]
        prev = f"y{t}"
    records += [_line("user", "b1", "a0", 10, _text("Migrate the billing invoices with the otter engine instead")),
                _line("assistant", "b2", "b1", 11, _text("Otter engine chosen for the billing invoices"))]
    cli("ingest", str(_write(tmp_path, records)))
    compact(Store(), "rw", budget=300, reflect=False)
    events = _events("rw")
    rewound = {e["seq"] for e in events if "zebra" in e["text"] and e["kind"] in ("user", "assistant")}
    result = push_pack(Store(), "rw", budget=3000, recall_min_score=None)
    assert result.pack.recalled and not set(result.pack.recalled_seqs) & rewound
    check_pack(result, events, 3000)
    hits = cli("recall", "zebra engine billing invoices", "--mode", "fulltext").lines()
    assert {h["seq"] for h in hits} & rewound


def test_a_long_withdrawn_gemini_stretch_stays_out_of_a_small_pack(tmp_path):
    lines = [{"sessionId": "gem-2", "projectHash": "p", "startTime": "2026-06-14T08:00:00Z"},
             {"id": "m0", "timestamp": "2026-06-14T08:00:00Z", "type": "user", "content": "Name the backup bucket"}]
    for t in range(30):
        lines += [{"id": f"w{t}", "timestamp": "2026-06-14T08:01:00Z", "type": "user",
                   "content": f"Walrus step {t}: " + "walrus words " * 60},
                  {"id": f"v{t}", "timestamp": "2026-06-14T08:02:00Z", "type": "gemini",
                   "content": f"Walrus reply {t}: " + "walrus text " * 60}]
    lines += [{"$rewindTo": "w0"},
              {"id": "m9", "timestamp": "2026-06-14T08:09:00Z", "type": "user", "content": "Rotate the backup keys"}]
    path = tmp_path / "session-gem2.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    cli("ingest", str(path))
    events = _events("gem-2")
    for budget in (600, 1500):
        result = push_pack(Store(), "gem-2", budget=budget, recall=False)
        said = [m for m in result.to_dict()["messages"] if m["part"] not in ("markers", "task")]
        assert not any("Walrus" in (m["content"] or "") for m in said), budget
        assert "Rotate the backup keys" in str(said)
        check_pack(result, events, budget)


def test_a_chatgpt_re_export_after_going_back_to_another_branch_packs_that_branch(tmp_path):
    """The first export's current branch is B; the user goes back to A and
    goes on there: the second export's new leaf (under A) decides, though
    A's older messages were logged as an alternate branch."""
    mapping = dict([_node("root", None, ["u1"]), _node("u1", "root", ["a1"], "user", "Plan the garden beds"),
                    _node("a1", "u1", ["uA", "uB"], "assistant", "Raised beds suit the plot"),
                    _node("uA", "a1", ["aA"], "user", "Plant otter tomatoes"),
                    _node("aA", "uA", [], "assistant", "Otter tomatoes need sun"),
                    _node("uB", "a1", ["aB"], "user", "Plant walrus basil"),
                    _node("aB", "uB", [], "assistant", "Walrus basil by the door")])
    path = tmp_path / "conversations.json"

    def export(current: str) -> str:
        path.write_text(json.dumps([{"title": "Garden", "conversation_id": "garden-2", "current_node": current,
                                     "create_time": 1740823200.0, "mapping": mapping}]))
        assert cli("ingest", str(path)).code == 0
        (session,) = {e["session_id"] for e in Store().events()}
        return session

    session = export("aB")
    assert "Plant otter tomatoes" not in _pack_text(session)[0]
    mapping.update([_node("uA2", "aA", ["aA2"], "user", "More otter tomatoes"),
                    _node("aA2", "uA2", [], "assistant", "Otter rows planted")])
    mapping["aA"]["children"] = ["uA2"]
    session = export("aA2")
    text, result = _pack_text(session)
    assert "Plant otter tomatoes" in text and "Otter tomatoes need sun" in text and "Otter rows planted" in text
    assert "alrus" not in text
    check_pack(result, _events(session), 4000)


def test_a_declared_leaf_read_in_part_never_drops_what_may_be_its_history():
    def ev(seq, uuid, parent, **meta):
        return {"seq": seq, "kind": "user", "source": {"uuid": uuid, "parent": parent}, "meta": meta}
    # the view holds an old prompt (read for the current turn) and the tail; the path from the
    # leaf leaves what was read at "p3": the old prompt may be its ancestor, so it stays
    read = [ev(2, "p1", "root"), ev(50, "x", "p3", branch="alternate"), ev(60, "p4", "p3"),
            ev(61, "leaf", "p4", live_leaf=True), ev(55, "off", "p3")]
    assert abandoned_seqs(read) == {50, 55}
    # older than where the path stopped: the reader's mark is what is known
    assert abandoned_seqs([*read, ev(40, "old-alt", "p0", branch="alternate")]) == {40, 50, 55}


def test_a_prompt_after_an_interruption_notice_with_the_same_parent_is_no_rewind(tmp_path):
    """The harness's interruption notice is no prompt the user typed: a
    prompt written as its sibling rewinds nothing."""
    records = [_line("user", "u0", None, 0, _text("Summarise the log")),
               _line("assistant", "a0", "u0", 1, _text("Reading the log now")),
               _line("user", "i1", "a0", 2, _text("[Request interrupted by user]")),
               _line("user", "u2", "a0", 3, _text("Only the errors, please")),
               _line("assistant", "a2", "u2", 4, _text("Two errors in the log"))]
    cli("ingest", str(_write(tmp_path, records)))
    assert not any("rewinds" in (e.get("meta") or {}) for e in _events("rw"))
    assert push_pack(Store(), "rw", budget=4000, recall=False).pack.elision is None


def _state(session: str) -> dict:
    run = cli("state", "show", "--session", session)
    assert run.code == 0
    return run.lines()[0]["state"]


def _zebra_then_otter() -> list[dict]:
    """The abandoned attempt asked for things, opened a file, failed a
    command and wrote a todo list before the user went back."""
    return [
        _line("user", "u1", None, 0, _text("Start the migration plan")),
        _line("assistant", "a1", "u1", 1, _text("Ready to plan")),
        _line("user", "z1", "a1", 2, _text("Use the zebra database engine")),
        _use("z2", "z1", 3, "tz", "TodoWrite", {"todos": [{"content": "Install the zebra driver", "status": "pending"}]}),
        _result("z3", "z2", 3, "tz", "ok"),
        _use("z4", "z3", 4, "tr", "Read", {"file_path": "/srv/zebra/engine.py"}),
        _result("z5", "z4", 4, "tr", "zebra engine missing", is_error=True),
        _line("user", "z6", "z5", 5, _text("Zebra follow-up question")),
        _line("assistant", "z7", "z6", 6, _text("Zebra follow-up answer")),
        _line("user", "o1", "a1", 10, _text("Use the otter database engine")),
        _use("o2", "o1", 11, "to", "Read", {"file_path": "/srv/otter/engine.py"}),
        _result("o3", "o2", 12, "to", "otter"),
        _line("assistant", "o4", "o3", 13, _text("Otter plan ready")),
    ]


def test_the_working_state_describes_the_live_branch_only(tmp_path):
    """What the abandoned attempt asked for, opened, failed at and planned
    is not the session's task any more: the state (and the pack's task
    block) names the live branch's requests and files only."""
    cli("ingest", str(_write(tmp_path, _zebra_then_otter())))
    state = _state("rw")
    assert state["current_task"] == "Use the otter database engine"
    assert state["task_chain"] == ["Start the migration plan", "Use the otter database engine"]
    assert state["open_files"] == ["/srv/otter/engine.py"] and state["blockers"] == []
    task = [m["content"] for m in push_pack(Store(), "rw", budget=4000, recall=False).to_dict()["messages"]
            if m["part"] == "task"]
    assert task and "Start the migration plan" in task[0] and "ebra" not in task[0]


def _ingest_grown(tmp_path, long_branch: bool = True):
    """The zebra attempt, the file long enough (past the size a grown file
    is parsed whole below) that its next ingest resumes at its last prompt,
    then the same file grown by the rewind. The length is in the abandoned
    branch, or (`long_branch=False`) in the live history before the fork."""
    records = _zebra_then_otter()
    pad, prev, at = [], ("z7" if long_branch else None), (9 if long_branch else 0)
    for t in range(40):
        pad += [_line("user", f"zp{t}", prev, 7, _text(f"Zebra detail {t}: " + "zebra " * 300 if long_branch
                                                        else f"Earlier audit {t}: " + "ledger " * 300)),
                _line("assistant", f"za{t}", f"zp{t}", 8, _text(f"Noted {t}"))]
        prev = f"za{t}"
    if not long_branch:
        records[0]["parentUuid"] = prev
    records[at:at] = pad
    path = _write(tmp_path, records[:89])                # all but the rewind
    cli("ingest", str(path))
    _write(tmp_path, records)
    cli("ingest", str(path))
    return path


def test_the_working_state_sees_a_rewind_ingested_after_the_branch_it_left(tmp_path):
    """The file grew after an ingest (a hook's or `trace follow`'s): the
    resumed parse starts at the rewinding prompt, so only the tree and the
    kept state can tell that it forks."""
    _ingest_grown(tmp_path)
    assert not any("rewinds" in (e.get("meta") or {}) for e in _events("rw"))
    state = _state("rw")
    # (the zebra attempt's many requests pushed the first one out of the bounded list: it stays out)
    assert state["task_chain"] == ["Use the otter database engine"]
    assert state["open_files"] == ["/srv/otter/engine.py"] and state["blockers"] == []
    text, result = _pack_text("rw")
    assert "ebra" not in text and "Otter plan ready" in text
    check_pack(result, _events("rw"), 4000)


def test_an_edit_of_the_first_prompt_is_a_rewind(tmp_path):
    """The edited first prompt is a second root (no parent): once the
    first had a reply, the roots fork, and the newest branch is live."""
    records = [_line("user", "u1", None, 0, _text("Draft the zebra release notes")),
               _line("assistant", "a1", "u1", 1, _text("Zebra release notes drafted")),
               _line("user", "u2", "a1", 2, _text("Add the zebra changelog section")),
               _line("assistant", "a2", "u2", 3, _text("Zebra changelog added")),
               _line("user", "v1", None, 4, _text("Draft the otter release notes")),
               _line("assistant", "v2", "v1", 5, _text("Otter release notes drafted"))]
    cli("ingest", str(_write(tmp_path, records)))
    events = _events("rw")
    assert [e["meta"]["rewinds"] for e in events if "rewinds" in (e.get("meta") or {})] == [[1, 5]]
    text, result = _pack_text("rw")
    assert "ebra" not in text and "Draft the otter release notes" in text and "Otter release notes drafted" in text
    assert "rewound branch" in result.pack.elision.text
    check_pack(result, events, 4000)
    assert any("Zebra changelog" in h["text"] for h in cli("recall", "zebra changelog", "--mode", "fulltext").lines())
    # the tree alone (a parse resumed at the edit) finds the fork too
    plain = [{**e, "meta": {k: v for k, v in (e.get("meta") or {}).items() if k != "rewinds"}} for e in events]
    assert abandoned_seqs(plain) == {e["seq"] for e in events if "ebra" in e["text"] and e["kind"] != "task_state"}


def test_roots_in_a_file_whose_lines_name_no_parent_are_no_fork(tmp_path):
    """Hand-made files give every line a null parent: each prompt is a
    root, and nothing follows any of them, so nothing is a rewind."""
    records = [_line("user", "u1", None, 0, _text("Draft the zebra release notes")),
               _line("assistant", "a1", None, 1, _text("Zebra release notes drafted")),
               _line("user", "u2", None, 2, _text("Draft the otter release notes")),
               _line("assistant", "a2", None, 3, _text("Otter release notes drafted"))]
    cli("ingest", str(_write(tmp_path, records)))
    events = _events("rw")
    assert not any("rewinds" in (e.get("meta") or {}) for e in events)
    pack = push_pack(Store(), "rw", budget=4000, recall=False).pack
    assert pack.elision is None
    assert abandoned_seqs(events) == set()


def test_recall_marks_an_abandoned_branch_and_the_prompt_hook_leaves_it_out(tmp_path):
    """`trace recall` finds the abandoned attempt and says it was
    abandoned; the prompt-time hook, which injects hits as what happened,
    leaves it out (as the pack's recalled-context block does)."""
    from stores.hooks.runtime import run_hook
    cli("ingest", str(_write(tmp_path, _zebra_then_otter())))
    hits = cli("recall", "zebra follow-up question", "--mode", "fulltext", "--json").lines()
    zebra = [h for h in hits if "Zebra follow-up" in h["text"]]
    assert zebra and all(h.get("abandoned") is True for h in zebra)
    live = [h for h in hits if h["text"] in ("Use the otter database engine", "Ready to plan")]
    assert live and not any("abandoned" in h for h in live)
    out = run_hook(Store(), "claude-code", "UserPromptSubmit",
                   json.dumps({"session_id": "rw", "prompt": "what was the zebra follow-up question?"}), min_score=0)
    assert "Zebra follow-up" not in out.stdout
    live = run_hook(Store(), "claude-code", "UserPromptSubmit",
                    json.dumps({"session_id": "rw", "prompt": "is the otter plan ready?"}), min_score=0)
    assert "Otter plan ready" in live.stdout                  # the live branch is still recalled


def test_recall_marks_a_branch_left_by_a_rewind_parsed_in_a_later_run(tmp_path):
    """No prompt carries `meta.rewinds` (the resumed parse began at the
    rewinding prompt): the two prompts sharing a parent still say it."""
    _ingest_grown(tmp_path, long_branch=False)
    assert not any("rewinds" in (e.get("meta") or {}) for e in _events("rw"))
    hits = cli("recall", "zebra follow-up question", "--mode", "fulltext", "--json").lines()
    zebra = [h for h in hits if "Zebra follow-up" in h["text"]]
    assert zebra and all(h.get("abandoned") is True for h in zebra)


def test_recall_marks_what_a_gemini_rewind_withdrew_and_only_sources_that_can_rewind_are_read(tmp_path, monkeypatch):
    """Gemini CLI says a rewind by a notice, so its hits are judged; a
    source that can never rewind (an OpenAI message list) is not, since
    reading the prompts around each of its hits would only cost time."""
    from reducers.branches import NOTICE_REWIND_FORMATS
    from reducers.formats.gemini_cli import NAME
    from stores.context.reading import SessionReader
    assert NAME in NOTICE_REWIND_FORMATS
    _gemini_rewound(tmp_path)
    hits = cli("recall", "walrus bucket", "--mode", "fulltext", "--json").lines()
    assert hits and all(h.get("abandoned") is True for h in hits if "alrus" in h["text"])
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"messages": [{"role": "user", "content": "Delete the heron bucket"},
                                              {"role": "assistant", "content": "Heron bucket deleted"}]}) + "\n")
    assert cli("ingest", "--format", "openai", str(plain)).code == 0
    read = []
    monkeypatch.setattr(SessionReader, "of_kinds", lambda self, *a, **k: read.append(self.session_id) or [])
    from stores.recall import Recaller, RecallQuery
    found = Recaller(Store()).recall(RecallQuery(query="heron bucket", k=10, mode="fulltext"))
    heron = {h.session_id for h in found if "eron" in h.text}
    assert heron and "gem-1" in read and not heron & set(read)
