"""A compaction that needs more than one span in one pass: the second
span's marker absorbs the first (planned in the same pass, so it has no
id yet) instead of failing."""
from __future__ import annotations

from reducers.cache import Cache
from reducers.evict import plan_compaction
from tests.test_evict import turn


def test_a_second_span_absorbs_the_marker_planned_before_it():
    items = [{"session_id": "s", "turn_id": None, "id": "e0", "seq": 0, "kind": "system", "text": "sys", "tokens": 5}]
    for t in range(6):
        items += turn(1 + 4 * t, t, tokens=20 if t % 2 else 10)
    plan = plan_compaction(Cache("s", items=items), budget=100, headroom=0, hot_turns=1)
    [marker] = plan.markers
    info = marker["meta"]["marker"]
    assert info["replaces"] == [] and info["ranges"] == [[1, 20]]
    assert plan.evicted == 20 and plan.fits
