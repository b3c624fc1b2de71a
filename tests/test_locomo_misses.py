"""`trace bench locomo --misses`: each evidence turn outside the top K is
placed either among the candidates recall ranked too low, or among those no
candidate generator reached (trace_cli/bench/locomo_misses.py)."""
from __future__ import annotations

import json

from tests.helpers import cli

FILLER = ["Bo: The weather was rainy all week.", "Ann: Rainy weeks make me sleepy.", "Bo: Same, I napped twice.",
          "Ann: Tea helps on grey mornings.", "Bo: Coffee for me, always.", "Ann: Fair enough, to each their own.",
          "Bo: Did you finish the puzzle?", "Ann: Almost, four pieces left."]


def _conversation() -> dict:
    lines = ["Ann: I adopted a parrot named Kiwi last spring.", "Bo: Lovely, how old is it?",
             "Ann: The parrot is three and talks a lot."] + FILLER + ["Ann: My sister lives in Lisbon now."]
    turns = [{"speaker": text.split(":")[0], "text": text.split(": ", 1)[1], "dia_id": f"D1:{i + 1}"}
             for i, text in enumerate(lines)]
    qa = [{"question": "Which parrot?", "answer": "Kiwi", "evidence": ["D1:1", "D1:3"], "category": 4},
          {"question": "Which city is home to the sibling?", "answer": "Lisbon", "evidence": [f"D1:{len(lines)}"],
           "category": 1}]
    return {"sample_id": "conv-t", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
                                                    "session_1": turns, "session_1_date_time": "1:00 pm on 8 May, 2023"},
            "qa": qa}


def test_misses_tell_an_evidence_turn_ranked_too_low_from_one_no_candidate_reached(tmp_path):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_conversation()]))
    out = tmp_path / "misses.jsonl"
    run = cli("bench", "locomo", str(data), "-k", "1", "--mode", "fulltext", "--misses", str(out),
              "--workdir", str(tmp_path / "work"), "--json")
    assert run.code == 0, run.err
    counts = {r["category"]: r for r in run.lines() if r["bench"] == "locomo-misses"}
    assert {k: counts["all"][k] for k in ("evidence", "in_top_k", "ranked_below_k", "in_pool_below_hits",
                                          "not_in_pool")} == {"evidence": 3, "in_top_k": 1, "ranked_below_k": 1,
                                                              "in_pool_below_hits": 0, "not_in_pool": 1}
    rows = {r["where"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"ranked_below_k", "not_in_pool"}
    low = rows["ranked_below_k"]
    assert low["category"] == 4 and "parrot" in low["evidence"] and low["rank"] == 2 and low["pool_rank"] == 2
    lost = rows["not_in_pool"]
    assert "Lisbon" in lost["evidence"] and lost["rank"] is None and lost["pool_rank"] is None
