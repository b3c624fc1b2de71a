"""A hybrid recall whose hits share no word with the query, and whose
calibrated score says they probably hold no answer, keeps its hits (a
paraphrase can be the answer; DESIGN.md keeps exit 3 for "no result at or
above --min-score") but says on stderr what they are: neighbours by
meaning only, and weak. Full text alone says "no hits" (exit 3); a script
that gates with --min-score 0.5 gets exit 3 from hybrid too. And the gate
compares the score as printed, so a printed score passed back keeps its hit."""
from __future__ import annotations

import json

import pytest

from tests.helpers import cli
from trace_cli.bench.needles import build_session

NOTE = "these are neighbours by meaning only"


@pytest.fixture
def store(tmp_path, trace_home):
    session = build_session(turns=60, needles=3, seed=7)
    session.write_openai(tmp_path / "s.jsonl")
    assert cli("ingest", str(tmp_path / "s.jsonl")).code == 0
    return session


@pytest.mark.parametrize("query", ["zebraxyz quokka", "qwertyuiopasdfgh", "what is the capital of Mongolia"])
def test_hits_with_no_word_of_the_query_are_kept_and_named_weak(store, query):
    run = cli("recall", query, "--mode", "hybrid", "-k", "3")
    hits = [json.loads(line) for line in run.out.splitlines()]
    assert run.code == 0 and len(hits) == 3
    assert all(h["scores"]["bm25"] == 0 and h["scores"]["coverage"] == 0 for h in hits)
    assert NOTE in run.err and f"score {hits[0]['score']:.2f}" in run.err
    assert len(run.err.strip().splitlines()) == 1                  # one line, no traceback
    assert cli("recall", query, "--mode", "fulltext").code == 3
    gated = cli("recall", query, "--mode", "hybrid", "--min-score", "0.5")
    assert gated.code == 3 and gated.out == "" and NOTE not in gated.err


def test_a_query_whose_words_are_found_gets_no_note(store):
    needle = store.needles[0]
    run = cli("recall", needle.query, "--mode", "hybrid", "-k", "3")
    assert run.code == 0 and NOTE not in run.err
    assert cli("recall", "zebraxyz quokka", "--mode", "vector", "-k", "3").err == ""   # meaning was asked for


@pytest.mark.parametrize("query", ["budget rollback", "payroll sync port", "which build failed", "zebraxyz quokka"])
def test_the_printed_score_passed_back_as_min_score_keeps_the_hit(store, query):
    """A script reads a hit's score and gates on it: the gate compares the
    score as printed (4 decimals), so the hit it came from stays."""
    (top,) = cli("recall", query, "-k", "1").lines()
    again = cli("recall", query, "-k", "1", "--min-score", str(top["score"]))
    assert again.code == 0 and again.lines()[0]["event_id"] == top["event_id"]
    above = round(top["score"] + 0.0001, 4)
    if above <= 1:
        assert cli("recall", query, "-k", "1", "--min-score", str(above)).code == 3
