"""Scoring recall candidates (reducers/fusion.py): pure functions, so each
rule is checked on hand-made candidates."""
from __future__ import annotations

import numpy as np
import pytest

from reducers.fusion import (DELETED, SUPERSEDED, Candidate, coverage, mmr, sigmoid, similarity_matrix, stage1,
                             stage2, task_factor)

DAY = 86_400_000


def cand(seq, bm25=0.0, pos=None, session="s", ts_ms=100 * DAY, **kw) -> Candidate:
    return Candidate(seq=seq, session_id=session, pos=seq if pos is None else pos, ts_ms=ts_ms, bm25=bm25, **kw)


def test_a_stronger_lexical_match_ranks_first_and_scores_are_probabilities_on_a_fixed_scale():
    ranked = stage1([cand(1, bm25=4.0, pos=10), cand(2, bm25=12.0, pos=20)], set())
    assert [c.seq for c in ranked] == [2, 1]
    assert all(0.0 < c.score < 1.0 and c.score == sigmoid(c.z) for c in ranked)
    # The same bm25 gives the same score whatever else is in the pool.
    alone = stage1([cand(2, bm25=12.0, pos=20)], set())[0].score
    assert alone == pytest.approx(ranked[0].score)


def test_a_neighbour_of_a_strong_match_is_lifted_above_an_unrelated_weak_match():
    ranked = stage1([cand(1, bm25=20.0, pos=5), cand(2, bm25=0.0, pos=6),
                     cand(3, bm25=0.0, pos=50, session="other")], set())
    scores = {c.seq: c.score for c in ranked}
    assert scores[2] > scores[3]


def test_neighbours_count_only_within_the_same_session():
    ranked = stage1([cand(1, bm25=20.0, pos=5, session="a"), cand(2, pos=6, session="b")], set())
    assert {c.seq: c.x["near"] for c in ranked}[2] == 0


def test_the_named_speakers_turns_outrank_what_others_said_about_them():
    ranked = stage1([cand(1, bm25=8.0, speaker="ana"), cand(2, bm25=8.0, speaker="ben", pos=40)], {"ana"})
    assert [c.seq for c in ranked] == [1, 2]


def test_rare_term_coverage_outranks_common_term_matches_however_long_the_text():
    # A long tool output holding the query's rare terms once (low BM25) against a short
    # line repeating its common words (higher BM25).
    needle, chatter = cand(1, bm25=6.0, pos=1), cand(2, bm25=14.0, pos=30)
    stage1([needle, chatter], set())
    stage2(needle, coverage({"payroll", "sync", "port"}, {"payroll": 7.0, "sync": 6.0, "port": 1.5}), 6000)
    stage2(chatter, coverage({"port", "listens"}, {"payroll": 7.0, "sync": 6.0, "port": 1.5}), 60)
    assert needle.score > chatter.score


def test_a_missing_vector_is_neutral_not_a_penalty():
    tool, said = cand(1, bm25=10.0, pos=1), cand(2, bm25=10.0, pos=30, cosine=0.5)
    other = cand(3, bm25=0.0, pos=60, cosine=0.5)
    stage1([tool, said, other], set())
    assert tool.x["vector"] == 0.0 == said.x["vector"]     # at the median cosine: no lift either way


def test_superseded_and_deleted_facts_are_demoted_but_kept():
    live, sup, gone = (stage1([cand(1, bm25=10.0, sup=s)], set())[0] for s in (0.0, SUPERSEDED, DELETED))
    assert live.score > sup.score > gone.score > 0
    assert sup.scores["task"] == pytest.approx(1 - SUPERSEDED)


def test_recency_breaks_a_tie_in_favour_of_the_newer_event():
    ranked = stage1([cand(1, bm25=10.0, pos=1, ts_ms=10 * DAY), cand(2, bm25=10.0, pos=40, ts_ms=100 * DAY)], set())
    assert [c.seq for c in ranked] == [2, 1]
    assert ranked[0].scores["recency"] == pytest.approx(1.0)
    assert ranked[1].scores["recency"] < 0.2          # 90 days at a 30-day half-life


def test_task_factor_boosts_by_the_share_of_task_terms_mentioned():
    assert task_factor({"deploy", "ssl"}, set()) == 1.0
    assert task_factor({"deploy", "ssl"}, {"deploy", "ssl", "docker", "cert"}) == pytest.approx(1.125)
    assert task_factor({"unrelated"}, {"deploy"}) == 1.0


def test_similarity_is_jaccard_for_texts_and_cosine_for_vectors():
    v = np.array([1.0, 0.0], dtype=np.float32)
    w = np.array([0.0, 1.0], dtype=np.float32)
    sim = similarity_matrix([{"a", "b"}, {"b", "c"}, set(), set()], [None, None, v, w])
    assert sim[0][1] == pytest.approx(1 / 3)
    assert sim[2][2] == pytest.approx(1.0) and sim[2][3] == pytest.approx(0.0)
    assert sim[0][2] == 0.0                             # no vector on one side, no shared words
    assert np.allclose(sim, np.array(sim).T)


def test_jaccard_over_many_words_matches_set_arithmetic():
    a = {f"w{i}" for i in range(0, 300)}
    b = {f"w{i}" for i in range(150, 500)}
    sim = similarity_matrix([a, b, set()], [None, None, None])
    assert sim[0][1] == pytest.approx(len(a & b) / len(a | b))
    assert sim[2][2] == 0.0 and sim[0][2] == 0.0


def test_mmr_keeps_relevance_order_at_lambda_one_and_demotes_a_duplicate_below_it():
    def fresh():
        out = [cand(1), cand(2), cand(3)]
        for c, s in zip(out, (1.0, 0.95, 0.9)):
            c.score = s
        return out
    dup = {frozenset((1, 2)): 1.0}
    similarity = lambda a, b: dup.get(frozenset((a.seq, b.seq)), 0.0)
    assert [c.seq for c in mmr(fresh(), 3, 1.0, similarity)] == [1, 2, 3]
    picked = mmr(fresh(), 3, 0.7, similarity)
    assert [c.seq for c in picked] == [1, 3, 2]
    # Each hit carries the score that placed it, so scores fall with rank.
    assert [c.score for c in picked] == sorted((c.score for c in picked), reverse=True)
    assert picked[2].score == pytest.approx(0.95 - 0.3)
    assert len(mmr(fresh(), 2, 0.7, similarity)) == 2
