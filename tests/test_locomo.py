"""LoCoMo dev (../shared/data/locomo-dev): the recall quality bar, measured
exactly as ../shared/tools/README.md says, through the real CLI; and the
session-level and recall_all figures memory systems publish, from the
same hits (trace_cli/bench/locomo.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from tests.conftest import REPO, SHARED
from trace_cli.bench.locomo import gate, holding, norm, score

TOOLS = SHARED / "tools"
DATA = SHARED / "data" / "locomo-dev" / "locomo-dev.json"


@pytest.mark.shared
def test_locomo_dev_turn_and_session_recall_at_10_clear_the_bars(tmp_path):
    if not DATA.exists() or not TOOLS.is_dir():
        pytest.skip(f"LoCoMo dev set not found at {DATA}")
    env_python = sys.executable

    def run(*args, **kw):
        return subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=True, **kw)
    run("python3", str(TOOLS / "locomo_to_chat.py"), str(DATA), str(tmp_path / "lc"))
    store = str(tmp_path / "store")
    run(env_python, "-m", "trace_cli", "--store", store, "ingest", "--format", "openai",
        str(tmp_path / "lc" / "sessions.jsonl"))
    # 50 deep: session recall ranks sessions by their best hit; the turn scorer reads the first 10.
    hits = run(env_python, "-m", "trace_cli", "--store", store, "recall", "--queries",
               str(tmp_path / "lc" / "questions.jsonl"), "-k", "50", "--json").stdout
    (tmp_path / "hits.jsonl").write_text(hits)
    turn = subprocess.run(["python3", str(TOOLS / "score_locomo.py"), str(tmp_path / "lc" / "questions.jsonl"),
                           str(tmp_path / "hits.jsonl"), "10", "0.72"], capture_output=True, text=True)
    print(turn.stdout)
    assert turn.returncode == 0, turn.stdout

    events = run(env_python, "-m", "trace_cli", "--store", store, "export").stdout
    sessions_of_text = defaultdict(set)
    for line in events.splitlines():
        e = json.loads(line)
        sessions_of_text[norm(e.get("text") or "")].add(e["session_id"])
    by_query = defaultdict(list)
    for line in hits.splitlines():
        h = json.loads(line)
        by_query[h["query_id"]].append(h)
    questions = [json.loads(line) for line in open(tmp_path / "lc" / "questions.jsonl")]
    metrics = score(questions, by_query, 10, sessions_of_text)
    print(json.dumps(metrics))
    overall = metrics["all"]
    assert overall["questions"] == len(questions)
    assert overall["turn_R"] >= 0.72 and overall["turn_all"] >= 0.65
    assert overall["session_any"] >= 0.94 and overall["session_all"] >= 0.85
    # Scores fall with rank in every answer.
    for hs in by_query.values():
        assert [h["score"] for h in hs] == sorted((h["score"] for h in hs), reverse=True)


def test_session_and_turn_metrics_follow_their_definitions():
    questions = [{"id": "a", "category": 1, "evidence": ["Ann: x", "Ann: y"]},
                 {"id": "b", "category": 4, "evidence": ["Bo: z"]}]
    where = {"Ann: x": {"s1"}, "Ann: y": {"s2"}, "Bo: z": {"s3"}, "Ann: w": {"s4"}}
    hits = {"a": [{"rank": 1, "text": "Ann: x", "session_id": "s1"}, {"rank": 2, "text": "Ann: w", "session_id": "s4"},
                  {"rank": 3, "text": "Ann: w2", "session_id": "s4"}, {"rank": 4, "text": "Ann: y", "session_id": "s2"}],
            "b": [{"rank": 1, "text": "Ann: w", "session_id": "s4"}]}
    m = score(questions, hits, 2, where)
    assert m["c1"]["turn_R"] == 0.5 and m["c1"]["turn_all"] == 0.0
    assert m["c1"]["session_any"] == 1.0
    # The first 2 distinct sessions are s1 and s4: s2 is third.
    assert m["c1"]["session_all"] == 0.0
    assert score(questions, hits, 3, where)["c1"]["session_all"] == 1.0
    assert m["c4"]["session_any"] == 0.0 and m["all"]["questions"] == 2


def test_an_evidence_turn_is_looked_up_by_its_text_else_by_the_texts_that_contain_it():
    sessions = {"Ann: x": {"s1"}, "Ann: x and more": {"s2"}, "Bo: Ann: x": {"s3"}}
    seqs = {"Ann: x": [1], "Ann: x and more": [2, 5], "Bo: Ann: x": [3]}
    assert holding("Ann: x", sessions) == ["s1"] and holding("Ann: x", seqs) == [1]
    assert sorted(holding("x and", sessions)) == ["s2"] and holding("x and", seqs) == [2, 5]
    assert sorted(holding("Ann: x ", sessions)) == ["s2"]
    assert holding("Cy: q", seqs) == []


def test_the_gate_counts_a_query_right_only_when_a_passing_hit_holds_its_answer():
    hit = lambda text, s: {"text": text, "score": s}           # noqa: E731
    answerable = [([hit("Ann: x", 0.7), hit("Ann: y", 0.7)], ["Ann: y"]),      # passes, answer kept at rank 2
                  ([hit("Ann: w", 0.7)], ["Ann: x"]),                          # passes with no answer: wrong
                  ([hit("Ann: x", 0.3)], ["Ann: x"]),                          # its answer is dropped
                  ([hit("Bo: q", 0.2)], ["Bo: z"])]                            # nothing to keep
    no_answer = [[hit("Bo: z", 0.6)], [hit("Bo: z", 0.4)], [hit("Bo: v", 0.1)]]
    g = gate(answerable, no_answer, 0.5)
    assert g["precision"] == pytest.approx(1 / 3, abs=1e-4)        # 1 right of 2 answerable + 1 no-answer passing
    assert g["recall"] == 0.25 and g["recall_of_found"] == 0.5
    assert g["no_answer_dropped"] == pytest.approx(2 / 3, abs=1e-4)
