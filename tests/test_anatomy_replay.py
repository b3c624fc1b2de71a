"""Replay of `trace context` renders: each render's record names exactly
what the pack carried, and `anatomy diff` names every event a compaction
removed between two renders."""
from __future__ import annotations

import json
import re

import pytest

from tests.helpers import cli, openai_conversations


@pytest.fixture
def session(tmp_path):
    path = openai_conversations(tmp_path / "chat.jsonl", 1, turns=14, tool_every=2, prefix="deploy")
    run = cli("ingest", "--no-embed", str(path))
    assert run.code == 0, run.err
    return run.lines()[0]["session_id"]


def render(session: str, budget: int = 20_000) -> dict:
    run = cli("context", "--session", session, "--budget", str(budget), "--format", "json")
    assert run.code == 0, run.err
    return json.loads(run.out)


def compact(session: str, budget: int) -> dict:
    run = cli("compact", "--session", session, "--budget", str(budget), "--hot-tail", "1", "--headroom", "0")
    assert run.code == 0, run.err
    return run.lines()[0]


def turn(session: str, n: int) -> dict:
    run = cli("anatomy", "replay", "--session", session, "--turn", str(n))
    assert run.code == 0, run.err
    return json.loads(run.out)


def diff(session: str, a: int, b: int) -> tuple[dict, list[dict]]:
    run = cli("anatomy", "diff", "--session", session, str(a), str(b))
    assert run.code == 0, run.err
    summary, *changes = run.lines()
    return summary, changes


def recalled(pack: dict) -> list[int]:
    """The events the pack's <recalled-context> block quotes (`[ts kind #seq]`)."""
    return [int(s) for m in pack["messages"] if m["part"] == "recalled"
            for s in re.findall(r"^\[[^\]\n]* #(\d+)\] ", m["content"], re.M)]


def sent(pack: dict) -> list[int]:
    """Every event the pack carried: its messages' seqs, then those it recalled."""
    out: list[int] = []
    for m in pack["messages"]:
        out += [s for s in m["seqs"] if s not in out]
    return out + [s for s in recalled(pack) if s not in out]


def session_events(session: str) -> dict[int, dict]:
    return {e["seq"]: e for e in map(json.loads, cli("export", "--session", session).out.splitlines())}


def test_replay_lists_exactly_what_each_render_sent_across_compactions(session):
    packs = [render(session)]
    compact(session, 450)
    packs.append(render(session))
    compact(session, 250)
    small = cli("context", "--session", session, "--budget", "100")          # below the smallest pack
    assert small.code == 1
    need = int(small.err.split("raise --budget to at least ")[1].split()[0])
    packs.append(render(session, need))            # the smallest pack: it leaves events out
    rows = cli("anatomy", "replay", "--session", session).lines()
    assert [r["compactionCycle"] for r in rows] == [0, 1, 2]
    assert [r["compacted"] for r in rows] == [False, True, True]
    for n, pack in enumerate(packs, 1):
        shown = turn(session, n)
        assert [e["seq"] for e in shown["events"]] == sent(pack)
        logged = [m["id"] for m in pack["markers"] if m["id"]]        # the pack's own pointer has no id
        assert [m["id"] for m in shown["markers"]] == logged
        assert shown["record"]["markerCount"] == len(logged)
        assert shown["record"]["contextTokens"] == pack["tokens"]
        assert shown["record"]["contextUtilPct"] == round(100 * pack["tokens"] / pack["budget"], 2)
        conversation = [s for m in pack["messages"] if m["part"] == "conversation" for s in m["seqs"]]
        assert shown["record"]["historyEventCount"] == len(set(conversation))
    assert packs[2]["tokens"] <= need < packs[1]["tokens"]


def test_diff_names_each_event_a_compaction_removed(session):
    render(session)
    first = compact(session, 450)
    second_pack = render(session)
    back = set(recalled(second_pack))                      # evicted, yet quoted by the recalled block: still there
    events = session_events(session)
    [marker] = first["new_markers"]
    evicted = sorted(s for a, b in marker["ranges"] for s in range(a, b + 1)
                     if s in events and events[s]["kind"] != "marker" and s not in back)
    summary, changes = diff(session, 1, 2)
    left = [c for c in changes if c["change"] == "left"]
    assert sorted(c["seq"] for c in left) == evicted and summary["left"] == len(evicted)
    marker_event = next(e for e in events.values() if e["kind"] == "marker")
    assert all(c["reason"] == "evicted" and c["marker"] == marker_event["id"] and c["cycle"] == 1 for c in left)
    entered = [c for c in changes if c["change"] == "entered"]
    assert [c["seq"] for c in entered] == [marker_event["seq"]]
    # a second compaction merges the markers: what it evicts is named too, with the marker that covers it now
    second = compact(session, 250)
    third_pack = render(session)
    events = session_events(session)
    summary, changes = diff(session, 2, 3)
    newest = max((e for e in events.values() if e["kind"] == "marker"), key=lambda e: e["seq"])
    left_events = [c for c in changes if c["change"] == "left" and c["kind"] != "marker"]
    gone = set(sent(second_pack)) - set(sent(third_pack))
    assert second["evicted"] and {c["seq"] for c in left_events} == {s for s in gone if events[s]["kind"] != "marker"}
    assert all(c["reason"] == "evicted" and c["marker"] == newest["id"] and c["cycle"] == 2 for c in left_events)


def test_bad_replay_requests_fail_with_one_line(session):
    missing = cli("anatomy", "replay", "--session", "no-such-session")
    assert missing.code == 1 and "no anatomy records" in missing.err and "trace context" in missing.err
    render(session)
    render(session)
    out_of_range = cli("anatomy", "replay", "--session", session, "--turn", "3")
    assert out_of_range.code == 1 and "1..2" in out_of_range.err
    assert len(out_of_range.err.strip().splitlines()) == 1
    bad_diff = cli("anatomy", "diff", "--session", session, "1", "9")
    assert bad_diff.code == 1 and "1..2" in bad_diff.err
    assert cli("anatomy", "replay", "--session", session, "--turn", "0").code == 1


def test_an_html_report_to_a_place_that_cannot_hold_it_names_the_fix(session, tmp_path):
    render(session)
    nowhere = cli("anatomy", "replay", "--session", session, "--html", str(tmp_path / "no" / "such" / "r.html"))
    assert nowhere.code == 1 and "does not exist" in nowhere.err and str(tmp_path / "no" / "such") in nowhere.err
    folder = cli("anatomy", "replay", "--session", session, "--html", str(tmp_path))
    assert folder.code == 1 and "is a directory" in folder.err and "anatomy.html" in folder.err
    assert len(nowhere.err.strip().splitlines()) == len(folder.err.strip().splitlines()) == 1


def test_an_html_report_to_dash_goes_to_stdout_not_to_a_file_named_dash(session, tmp_path, monkeypatch):
    render(session)
    monkeypatch.chdir(tmp_path)
    run = cli("anatomy", "replay", "--session", session, "--html", "-")
    assert run.code == 0 and run.out.startswith("<!doctype html>") and not (tmp_path / "-").exists()
    both = cli("anatomy", "replay", "--session", session, "--html", "-", "--turn", "1")
    assert both.code == 2 and both.out == "" and "--html FILE" in both.err


def test_a_render_whose_record_cannot_be_written_still_gives_the_pack(session, trace_home):
    (trace_home / "anatomy").write_text("not a directory")       # fails for root too
    run = cli("context", "--session", session, "--budget", "20000", "--format", "json")
    assert run.code == 0 and json.loads(run.out)["messages"]
    assert "anatomy record was not written" in run.err and len(run.err.strip().splitlines()) == 1


def test_events_recalled_into_a_pack_are_in_its_record_and_never_said_to_have_left(samples):
    run = cli("ingest", "--no-embed", str(samples / "claude-code" / "demo-session.jsonl"))
    sid = run.lines()[0]["session_id"]
    before = len(cli("anatomy", "replay", "--session", sid).lines())
    assert cli("compact", "--session", sid, "--budget", "600", "--hot-tail", "1").code == 0
    pack = render(sid, budget=1200)
    block = next(m["content"] for m in pack["messages"] if "<recalled-context" in str(m["content"]))
    brought_back = recalled(pack)
    assert brought_back and "#" in block                          # the evicted config read, brought back
    call = turn(sid, before + 1)
    shown = {e["seq"] for e in call["events"]}
    assert set(brought_back) <= shown and call["record"]["context"]["recalledEvents"] == brought_back
    _, changes = diff(sid, before, before + 1)
    left = {c["seq"] for c in changes if c["change"] == "left"}
    assert left and left.isdisjoint(brought_back)                # in context, in the recalled block
