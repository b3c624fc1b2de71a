"""`trace bench fit`'s calibration step (trace_cli/bench/rank_fit.py): the
temperature is the one under which the shown scores say what they claim."""
from __future__ import annotations

import numpy as np

from reducers.fusion import Candidate
from trace_cli.bench.rank_fit import fit_tau


def _query(answer_at: int, n: int = 20):
    z = np.linspace(8.0, 2.0, n)                      # evenly falling logits
    y = np.zeros(n)
    y[answer_at] = 1.0
    cands = [Candidate(seq=i, gp=i, f=(0.0, 0.5, 0.0, 0.0)) for i in range(n)]
    return {"wanted": 1, "names": False, "unknown": [0.0, 0.0]}, (z, y, cands)


def _fit(positions):
    queries, ranked = zip(*(_query(p) for p in positions))
    return fit_tau(list(queries), list(ranked), {}, 3.0)     # A ≈ 0.95 for every query


def test_answers_at_the_top_fit_a_sharper_temperature_than_answers_spread_down_the_list():
    top = _fit([0] * 30)
    spread = _fit([i % 10 for i in range(30)])
    assert top > spread


def test_cross_validation_folds_keep_a_conversation_and_a_needle_session_together():
    from trace_cli.bench.rank_fit import fold_of
    folds = ["conv-1", "conv-2", "conv-3"]
    assert fold_of({"group": "lc:conv-2:c4", "id": "conv-2-17"}, folds) == "conv-2"
    # A needle session's questions, its pushed-context forms and its absent subjects share a fold.
    assert {fold_of({"group": g, "id": i}, folds) for g, i in
            (("needles", "needle-4-billing"), ("ctxq", "ctxq-4-billing"), ("absent", "absent-4-0"))} == {"conv-2"}
    assert fold_of({"group": "self", "id": "self-9"}, folds) == "conv-1"


def test_the_cross_validated_gate_keeps_an_answer_ranked_third_and_drops_queries_the_store_cannot_answer():
    from trace_cli.bench.rank_fit import cross_validated_gate

    def query(conv: str, i: int, answerable: bool):
        top = 9.0 + (i % 3) * 0.5 if answerable else 3.0 + (i % 3) * 0.5     # no-answer queries match weakly
        z = np.linspace(top, top - 4.0, 12)
        y = np.zeros(12)
        if answerable:
            y[2] = 1.0                                                    # the answer is the third hit
        cands = [Candidate(seq=j, gp=j, f=(0.0, 0.5, 0.0, 0.0)) for j in range(12)]
        q = {"group": f"lc:{conv}:c{4 if answerable else 5}", "id": f"{conv}-{i}", "wanted": int(answerable),
             "names": False, "unknown": [0.0, 0.0]}
        return q, (z, y, cands)
    pairs = [query(conv, i, i % 2 == 0) for conv in ("conv-a", "conv-b", "conv-c") for i in range(20)]
    queries, ranked = zip(*pairs)
    g = cross_validated_gate(list(queries), list(ranked))["lc"]
    assert g["recall"] == 1.0 and g["precision"] == 1.0 and g["no_answer_dropped"] == 1.0
    assert g["answerable"] == 30 and g["no_answer"] == 30
