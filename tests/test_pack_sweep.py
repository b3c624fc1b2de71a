"""The Bar over real sessions: every session in ../shared/transcripts (or
the directory TRACE_PACK_SWEEP names: a held-out set is run the same way),
rendered at budgets from 1,000 to 64,000 tokens, before and after
compaction. Each pack is within budget, holds the latest prompt, keeps every
call with its result, and every event it leaves out is reachable from a
marker in it (tests/pack_checks.py). A budget below the smallest pack is an
error naming the minimum, and that minimum renders.

`make test` runs three budgets before compaction and two after; the full
sweep is `make soak`."""
from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

from stores.context import compact, push_pack
from stores.errors import TraceError
from stores.store import Store
from tests.helpers import cli
from tests.pack_checks import check_pack, needed_budget

QUICK = (1000, 4000, 64000)
FULL = (1000, 1500, 2000, 3000, 4000, 6000, 8000, 9000, 12000, 16000, 24000, 32000, 48000, 64000)


def _corpus(shared_transcripts) -> Path:
    return Path(os.environ["TRACE_PACK_SWEEP"]) if os.environ.get("TRACE_PACK_SWEEP") else shared_transcripts


def _sessions(corpus: Path) -> dict[str, list[dict]]:
    cli("ingest", str(corpus), "--no-embed")            # edge-case fixtures hold some bad records: exit 1
    return _by_session(Store())


def _by_session(store) -> dict[str, list[dict]]:
    by_session: dict[str, list[dict]] = defaultdict(list)
    for e in store.events():
        by_session[e["session_id"]].append(e)
    return by_session


def _render_all(store, sessions: dict[str, list[dict]], budgets) -> dict:
    seen = {"packs": 0, "minimum": 0, "elided": 0}
    for sid, events in sorted(sessions.items()):
        for budget in budgets:
            try:
                result = push_pack(store, sid, budget=budget)
            except TraceError as exc:
                need = needed_budget(str(exc))
                assert need is not None and need > budget, str(exc)
                seen["minimum"] += 1
                budget = need
                result = push_pack(store, sid, budget=budget)
            found = check_pack(result, events, budget)
            seen["packs"] += 1
            seen["elided"] += bool(found["missing"])
    return seen


def _sweep(shared_transcripts, budgets, compact_at: int | None) -> dict:
    store = Store()
    sessions = _sessions(_corpus(shared_transcripts))
    if compact_at:
        for sid in sorted(sessions):
            compact(store, sid, budget=compact_at, reflect=False)    # fits or not, what it evicted is logged
        sessions = _by_session(store)
    assert sessions
    seen = _render_all(store, sessions, budgets)
    assert seen["packs"] >= len(sessions) * len(budgets) and seen["elided"] > 0
    return seen


@pytest.mark.shared
def test_every_real_session_renders_a_valid_pack_at_every_budget(shared_transcripts):
    _sweep(shared_transcripts, QUICK, compact_at=None)


@pytest.mark.shared
def test_every_real_session_renders_a_valid_pack_after_compaction(shared_transcripts):
    _sweep(shared_transcripts, (1000, 9000), compact_at=4000)


@pytest.mark.shared
@pytest.mark.soak
@pytest.mark.parametrize("compact_at", [None, 2000, 8000])
def test_the_full_budget_sweep_soak(shared_transcripts, compact_at):
    _sweep(shared_transcripts, FULL, compact_at=compact_at)
