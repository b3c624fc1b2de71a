"""OpenCode sessions as `opencode export` writes them: parts become events
by their ids (text, reasoning, tool call and result, files, patches), step
bookkeeping is left out, todos are the working state, and one message per
line reads the same."""
from __future__ import annotations

import json
from pathlib import Path

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import opencode
from reducers.formats.registry import detect_format
from tests.helpers import cli

SAMPLE = Path(__file__).resolve().parents[2] / "sample_sessions" / "opencode" / "ses_4b7e21c9a3ffe1Qd8ZkR2mVn5T.json"
SID = "ses_4b7e21c9a3ffe1Qd8ZkR2mVn5T"


def parse(records, session=None):
    out = list(opencode.parse(list(enumerate(records, 1)), ParseContext(path="x.json", source_id="/x.json",
                                                                         session=session)))
    return [d for d in out if isinstance(d, Draft)], [b for b in out if isinstance(b, BadRecord)]


def test_the_export_is_detected_and_every_part_that_was_said_is_an_event():
    doc = json.loads(SAMPLE.read_text())
    assert detect_format([doc]) == "opencode"
    drafts, bad = parse([doc])
    assert not bad
    assert [d.kind for d in drafts] == ["system", "user", "assistant", "assistant", "tool_call", "tool_result",
                                        "tool_call", "tool_result", "assistant", "system", "user", "user", "task_state"]
    assert {d.session_id for d in drafts} == {SID}
    assert not any("step" in ((d.meta or {}).get("subtype") or "") for d in drafts)


def test_tool_parts_pair_call_and_result_and_a_failure_is_an_error():
    drafts, _ = parse([json.loads(SAMPLE.read_text())])
    calls = [d for d in drafts if d.kind == "tool_call"]
    results = [d for d in drafts if d.kind == "tool_result"]
    assert [c.tool["call_id"] for c in calls] == [r.tool["call_id"] for r in results] == \
        ["toolu_01LedgerRun5x", "toolu_01LedgerGrep"]
    assert calls[0].tool["input"]["description"] == "Run the flaky test five times"
    assert "txn_8812 before txn_8809" in results[0].text and not results[0].tool["is_error"]
    assert results[1].tool["is_error"] and results[1].text == "Error: no matches: the query has no ORDER BY"


def test_reasoning_files_and_todos_are_kept():
    drafts, _ = parse([json.loads(SAMPLE.read_text())])
    assert any((d.meta or {}).get("thinking") and "ordering or time" in d.text for d in drafts)
    attached = next(d for d in drafts if d.media)
    assert attached.text == "[file: ci-failure.log]" and attached.media[0]["mime"] == "text/plain"
    assert "[pending] Commit the ORDER BY fix" in drafts[-1].text


def test_a_message_per_line_reads_as_the_export_does():
    doc = json.loads(SAMPLE.read_text())
    whole, _ = parse([doc])
    lines, bad = parse(doc["messages"])
    assert not bad
    assert [d.key for d in lines] == [d.key for d in whole if d.kind not in ("task_state",)
                                      and (d.meta or {}).get("subtype") != "title"]


def test_a_pending_tool_gives_its_call_now_and_its_result_once_the_export_has_it(tmp_path):
    doc = json.loads(SAMPLE.read_text())
    running = json.loads(SAMPLE.read_text())
    tool = running["messages"][1]["parts"][3]
    tool["state"] = {"status": "running", "input": tool["state"]["input"], "time": {"start": 1}}
    running["messages"] = running["messages"][:2]
    early, late = tmp_path / "a.json", tmp_path / "b.json"
    early.write_text(json.dumps(running))
    late.write_text(json.dumps(doc))
    store = str(tmp_path / "s")
    first = cli("--store", store, "ingest", "--no-embed", str(early)).lines()[0]
    second = cli("--store", store, "ingest", "--no-embed", "--format", "opencode", str(late)).lines()[0]
    total = len(parse([doc])[0])
    assert first["added"] + second["added"] == total


def test_something_else_is_a_bad_record():
    drafts, bad = parse([{"info": {"id": "x"}}])
    assert not drafts and bad[0].reason.startswith("not an OpenCode export")


RUN_SID = "ses_0ba6runstream"


def _run_line(kind: str, ts: int, part: dict | None = None, **extra) -> dict:
    line = {"type": kind, "timestamp": ts, "sessionID": RUN_SID, **extra}
    if part is not None:
        line["part"] = {"sessionID": RUN_SID, **part}
    return line


RUN = [
    _run_line("step_start", 1783579255000, {"id": "prt_s", "messageID": "msg_a", "type": "step-start"}),
    _run_line("tool_use", 1783579256000, {"id": "prt_t", "messageID": "msg_a", "type": "tool", "tool": "bash",
                                          "callID": "call_1", "state": {"status": "completed",
                                                                        "input": {"command": "echo hi"},
                                                                        "output": "hi-7731\n", "title": "echo"}}),
    _run_line("text", 1783579257000, {"id": "prt_x", "messageID": "msg_a", "type": "text", "text": "Done."}),
    _run_line("text", 1783579257500, {"id": "prt_x", "messageID": "msg_a", "type": "text", "text": "Done."}),
    _run_line("text", 1783579258000, {"id": "prt_x", "messageID": "msg_a", "type": "text", "text": "Done, all green."}),
    _run_line("step_finish", 1783579259000, {"id": "prt_f", "messageID": "msg_a", "type": "step-finish",
                                             "tokens": {"total": 7322}}),
    _run_line("error", 1783579260000, error={"name": "APIError", "data": {"message": "rate limited"}}),
]


def test_the_run_event_stream_is_read_as_the_parts_it_carries():
    assert detect_format(RUN[:5]) == "opencode"
    ctx = ParseContext(path="run.jsonl", source_id="/run.jsonl")
    out = list(opencode.parse(list(enumerate(RUN, 1)), ctx))
    assert not [b for b in out if isinstance(b, BadRecord)]
    got = [(d.kind, d.text, d.session_id) for d in out]
    assert got == [("tool_call", 'bash {"command":"echo hi"}', RUN_SID), ("tool_result", "hi-7731\n", RUN_SID),
                   ("assistant", "Done.", RUN_SID), ("assistant", "Done, all green.", RUN_SID),
                   ("system", "Error: APIError: rate limited", RUN_SID)]
    assert out[1].tool == {"name": "bash", "call_id": "call_1", "is_error": False}
    assert out[0].ts == "2026-07-09T06:40:56.000Z"
    # the same keys an export of the session gives its parts
    assert out[0].key == f"opencode/{RUN_SID}/msg_a/prt_t" and len({d.key for d in out}) == len(out)
    assert ctx.ignored == 3              # step start and finish, the text sent again unchanged


def test_the_run_event_stream_ingests_once(tmp_path):
    src = tmp_path / "run.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in RUN))
    first = cli("--store", str(tmp_path / "s"), "ingest", str(src))
    again = cli("--store", str(tmp_path / "s"), "ingest", "--recheck", str(src))
    (a,), (b,) = first.lines(), again.lines()
    assert first.code == 0 and (a["format"], a["added"], a["ignored"], a["errors"]) == ("opencode", 5, 3, 0)
    assert (b["added"], b["skipped"]) == (0, 5)
