"""Honest time: an event whose source gave no timestamp takes one from its
neighbours in the session, else from the file, and says it was inferred;
recency and --since then see the real age of old traffic."""
from __future__ import annotations

import json
import os

from reducers.drafts import BadRecord, Draft
from reducers.timestamps import FILE, NEXT, PREVIOUS, infer_times
from tests.helpers import cli

FILE_TS = "2025-01-01T00:00:00.000Z"


def d(n: int, ts: str | None = None, session: str = "s") -> Draft:
    return Draft(kind="user", text=f"m{n}", session_id=session, key=f"k{n}", ts=ts)


def test_a_missing_time_takes_the_previous_one_in_its_session():
    out = list(infer_times([d(1, "2026-03-01T10:00:00.000Z"), d(2)], FILE_TS))
    assert out[1].ts == "2026-03-01T10:00:00.000Z" and out[1].meta == {"ts_inferred": PREVIOUS}
    assert out[0].meta is None                                 # a real timestamp is not touched


def test_leading_events_take_the_next_time_and_order_is_kept():
    src = [d(1), d(2, session="other"), d(3), d(4, "2026-03-01T10:00:05.000Z"), d(5)]
    out = list(infer_times(src, FILE_TS))
    assert [x.text for x in out] == ["m1", "m2", "m3", "m4", "m5"]
    assert out[0].ts == out[2].ts == "2026-03-01T10:00:05.000Z" and out[0].meta["ts_inferred"] == NEXT
    assert out[1].ts == FILE_TS and out[1].meta["ts_inferred"] == FILE    # no neighbour with a time
    assert out[4].meta["ts_inferred"] == PREVIOUS


def test_a_file_without_any_time_uses_the_files_time():
    out = list(infer_times([d(i) for i in range(5)], FILE_TS))
    assert {x.ts for x in out} == {FILE_TS} and all(x.meta["ts_inferred"] == FILE for x in out)


def test_the_look_ahead_is_bounded():
    src = [d(0)] + [d(i, session="busy") for i in range(1, 50)] + [d(99, "2026-03-01T10:00:00.000Z")]
    out = list(infer_times(src, FILE_TS, lookahead=10))
    assert [x.text for x in out] == [x.text for x in src]
    assert out[0].ts == FILE_TS                              # it could not wait for a later time


def test_bad_records_pass_through_in_place():
    bad = BadRecord(line=2, reason="not JSON")
    out = list(infer_times([d(1), bad, d(3, "2026-03-01T10:00:00.000Z")], FILE_TS))
    assert out[1] is bad and [getattr(x, "text", None) for x in out] == ["m1", None, "m3"]


def test_old_traffic_without_times_is_not_recent(tmp_path):
    chat = tmp_path / "tau.jsonl"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "rebook flight HAT-1234 to Denver"},
                                             {"role": "assistant", "content": "rebooked HAT-1234"}]}) + "\n")
    old = 1_700_000_000                                          # November 2023
    os.utime(chat, (old, old))
    assert cli("ingest", str(chat)).code == 0
    events = cli("show", "1..2").lines()
    assert all(e["ts"].startswith("2023-11-14") and e["meta"]["ts_inferred"] == FILE for e in events)
    assert cli("recall", "rebook HAT-1234", "--since", "3d").lines() == []      # months old, not new
    assert cli("recall", "rebook HAT-1234", "--since", "2023-11-01").lines()
