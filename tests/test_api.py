"""The Python API: every command is a `Store` method returning a typed
result with .to_dict() and .to_json(), and the command prints exactly
what the method returns."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stores.api.results import NoteList, RecallResult, SessionList, ShowResult, WorkingStateResult
from stores.errors import NoResult, TraceError
from stores.store import Store
from tests.helpers import cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
SESSION = "5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    shutil.copytree(SAMPLES / "claude-code", root / "in" / "claude-code")
    shutil.copytree(SAMPLES / "codex", root / "in" / "codex")
    results = list(Store(root / "store").ingest([str(root / "in")]))
    assert results and all(r.errors == 0 for r in results)
    return root / "store", results


def _same_json(result) -> dict:
    """to_json() is to_dict() as a JSON string, and as_json() its older name."""
    text = result.to_json()
    assert isinstance(text, str)
    data = result.to_dict()
    assert json.loads(text) == json.loads(json.dumps(data, default=str))
    assert result.as_json() == data
    return data


def test_ingest_results_are_typed_and_serialise(built):
    _, results = built
    data = _same_json(results[0])
    assert data["added"] > 0 and "error_lines" not in data
    stats = _same_json(Store(built[0]).stats())
    assert stats["events"] >= sum(r.added for r in results) and stats == cli("--store", str(built[0]), "stats").lines()[0]


def test_recall_is_what_the_command_prints(built):
    store = Store(built[0])
    result = store.recall("which commit lowered the payments timeout", k=3, mode="fulltext")
    assert isinstance(result, RecallResult) and len(result) == 3
    assert "9f2c4e1a" in result.hits[0].text
    data = _same_json(result)
    assert [h["seq"] for h in data["hits"]] == [h.seq for h in result]
    printed = cli("--store", str(built[0]), "recall", "which commit lowered the payments timeout", "-k", "3",
                  "--mode", "fulltext").lines()
    assert [(h["event_id"], h["rank"]) for h in printed] == [(h["event_id"], h["rank"]) for h in data["hits"]]
    again = store.recall("payments timeout", k=2, mode="fulltext")     # the same Store: its recaller stays warm
    assert len(again) == 2


def test_show_and_export_are_what_the_commands_print(built):
    store = Store(built[0])
    shown = store.show("1..5")
    assert isinstance(shown, ShowResult) and [e["seq"] for e in shown] == [1, 2, 3, 4, 5]
    assert _same_json(shown)["events"] == cli("--store", str(built[0]), "show", "1..5").lines()
    exported = store.export(SESSION[:8])                  # a unique prefix names the session
    assert exported.session_id == SESSION
    events = list(exported)
    assert events and {e["session_id"] for e in events} == {SESSION}
    assert [e["seq"] for e in events] == [e["seq"] for e in
                                          cli("--store", str(built[0]), "export", "--session", SESSION[:8]).lines()]


def test_sessions_state_and_notes(built):
    store = Store(built[0])
    sessions = store.sessions()
    assert isinstance(sessions, SessionList)
    assert _same_json(sessions)["sessions"] == cli("--store", str(built[0]), "sessions").lines()
    assert store.sessions(source="codex").sessions and all(s.format == "codex" for s in store.sessions(source="codex"))
    state = store.state(SESSION[:8])
    assert isinstance(state, WorkingStateResult) and state.session_id == SESSION and "payments" in state.text
    with pytest.raises(TraceError):
        store.state("no-such-session")
    note = store.add_note("raise the PSP timeout only with a retry", "decision", SESSION[:8])
    assert note.session_id == SESSION and _same_json(note)["category"] == "decision"
    listed = store.notes(SESSION)
    assert isinstance(listed, NoteList) and [n.id for n in listed] == [note.id]
    assert [n["id"] for n in cli("--store", str(built[0]), "note", "list", "--session", SESSION[:8]).lines()] == [note.id]


def test_a_session_without_working_state_is_no_result(tmp_path):
    store = Store(tmp_path / "s")
    list(store.ingest([str(SAMPLES / "claude-code")], working_state=False))    # `ingest --no-state`
    sid = store.sessions().sessions[0].session_id
    with pytest.raises(NoResult):
        store.state(sid)


def test_compact_context_and_replay(built):
    store = Store(built[0])
    plan = store.compact(SESSION, budget=600, hot_tail=1, dry_run=True)
    data = _same_json(plan)
    assert data["dry_run"] and data["evicted"] > 0 and data["tokens_after"] < data["tokens_before"]
    pack = store.context(SESSION, budget=1200)
    assert pack.to_dict() == pack.formatted("json") and pack.pack.tokens <= 1200
    assert json.loads(pack.to_json())["session_id"] == SESSION
    replay = store.replay(SESSION[:8])
    calls = _same_json(replay)["calls"]
    assert calls and calls[-1]["origin"] == "render"       # the context call above left its record
    assert store.replay(SESSION, turn=1).turn["turn"] == 1


def test_sweep_and_digest(built, tmp_path):
    store = Store(built[0])
    report = store.sweep(dry_run=True)
    assert _same_json(report)["dry_run"] is True and report.events > 0
    store.sweep()
    digest = store.digest(tmp_path / "MEMORY.md", max_lines=12)
    assert _same_json(digest)["lines"] <= 12 and (tmp_path / "MEMORY.md").read_text().startswith("# Memory digest")
