"""Scoring recall candidates (reducers/fusion.py) and what the scores mean
(reducers/calibration.py): pure functions, so each rule is checked on
hand-made candidates."""
from __future__ import annotations

import numpy as np
import pytest

from reducers.calibration import answerable, asks_question, query_features, window_scores
from reducers.fusion import (DELETED, SUPERSEDED, Candidate, features, mmr, score_all, similarity_matrix,
                             task_factor)

DAY = 86_400_000


def cand(seq, bm25=0.0, pos=None, session=1, ts_ms=100 * DAY, **kw) -> Candidate:
    return Candidate(seq=seq, gp=session << 32 | (seq if pos is None else pos), ts_ms=ts_ms, bm25=bm25, **kw)


def ranked(cands, named=frozenset(), idf=10.0):
    return score_all(list(cands), set(named), idf)


def test_a_stronger_lexical_match_ranks_first():
    out = ranked([cand(1, bm25=4.0, pos=10, held=3.0), cand(2, bm25=12.0, pos=20, held=3.0)])
    assert [c.seq for c in out] == [2, 1]
    assert features(out[0])["bm25"] == pytest.approx(12.0 / 20)         # a fixed scale, not per query


def test_a_neighbour_of_a_strong_match_is_lifted_above_an_unrelated_weak_match():
    out = ranked([cand(1, bm25=20.0, pos=5), cand(2, bm25=0.0, pos=6), cand(3, bm25=0.0, pos=50, session=2)])
    z = {c.seq: c.z for c in out}
    assert z[2] > z[3]


def test_neighbours_count_only_within_the_same_session():
    out = ranked([cand(1, bm25=20.0, pos=5, session=1), cand(2, pos=6, session=2)])
    assert features(next(c for c in out if c.seq == 2))["near"] == 0


def test_the_named_speakers_turns_outrank_what_others_said_about_them():
    out = ranked([cand(1, bm25=8.0, speaker_key=7), cand(2, bm25=8.0, speaker_key=9, pos=40)], named={7})
    assert [c.seq for c in out] == [1, 2]


def test_rare_term_coverage_outranks_common_term_matches_however_long_the_text():
    # A long tool output holding the query's rare terms once (low BM25) against a short
    # line repeating its common words (higher BM25): held is the IDF of the terms each holds.
    needle = cand(1, bm25=6.0, pos=1, held=13.0, chars=6000)
    chatter = cand(2, bm25=14.0, pos=30, held=1.5, chars=60)
    out = ranked([needle, chatter], idf=14.5)
    assert out[0] is needle


def test_a_terse_reply_in_an_exchange_about_the_query_outranks_one_in_an_unrelated_exchange():
    # Neither reply holds a query term; the first one's neighbours hold all of them (window).
    elsewhere = cand(1, pos=50, session=2, chars=40)          # the lower seq: it would win a tie
    about = cand(2, pos=10, window=10.0, chars=40)
    out = ranked([elsewhere, about], idf=10.0)
    assert out[0] is about and features(about)["window"] == 1.0 and features(elsewhere)["window"] == 0.0
    assert features(ranked([cand(3, window=25.0)])[0])["window"] == 1.0      # a share of the query's IDF: capped


def test_a_missing_vector_is_neutral_not_a_penalty():
    tool, said = cand(1, bm25=10.0, pos=1), cand(2, bm25=10.0, pos=30, cosine=0.5)
    other = cand(3, bm25=0.0, pos=60, cosine=0.5)
    ranked([tool, said, other])
    assert features(tool)["vector"] == 0.0 == features(said)["vector"]   # at the median cosine: no lift either way


def test_superseded_and_deleted_facts_are_demoted_but_kept():
    live, sup, gone = (ranked([cand(1, bm25=10.0, sup=s)])[0] for s in (0.0, SUPERSEDED, DELETED))
    assert live.z > sup.z > gone.z
    assert live.z - sup.z == pytest.approx(-np.log(1 - SUPERSEDED))       # half its probability, in logit terms


def test_recency_breaks_a_tie_in_favour_of_the_newer_event():
    out = ranked([cand(1, bm25=10.0, pos=1, ts_ms=10 * DAY), cand(2, bm25=10.0, pos=40, ts_ms=100 * DAY)])
    assert [c.seq for c in out] == [2, 1]
    assert out[0].rec == pytest.approx(1.0) and out[1].rec < 0.2          # 90 days at a 30-day half-life


def test_the_first_page_shares_the_chance_an_answer_is_there_and_scores_never_rise_after_it():
    zs = [4.0, 3.9, 1.0, 0.5, 0.2, 0.1, 0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -9.0]
    scores, p_hit = window_scores(zs, 0.8, 14)
    # A gate at 0.5 keeps the whole first page of a probably answerable
    # query, so an answer ranked fifth is kept with the first.
    assert scores[:10] == [pytest.approx(0.8)] * 10
    assert all(a >= b for a, b in zip(scores, scores[1:]))
    assert scores[10] < 0.8 and scores[13] < scores[10]          # past the first page: the ten hits ending here
    assert all(0.0 <= p <= s <= 1.0 for p, s in zip(p_hit, scores))
    assert sum(p_hit[:10]) == pytest.approx(0.8)                   # the first ten share A between them
    assert p_hit == sorted(p_hit, reverse=True)                    # p_hit orders hits that share a score


def test_a_short_list_scores_every_hit_at_a():
    scores, p_hit = window_scores([3.0, 1.0, 0.0], 0.3, 3)
    assert scores == [pytest.approx(0.3)] * 3 and sum(p_hit) == pytest.approx(0.3)


def test_a_line_asks_when_a_question_mark_ends_a_clause_of_dialogue():
    assert asks_question("Joanna: Wow, what made you choose that shade? Tell me all", "assistant")
    assert asks_question('Tim: did you say "yes?"', "user")
    assert not asks_question("Nate: I picked it because it stands out.", "user")
    assert not asks_question("GET /search?q=turtles&page=2 200", "tool_result")      # a URL's query string
    assert not asks_question("where?is", "user")


def test_a_query_about_something_the_store_never_saw_is_probably_unanswerable():
    seen = query_features([6.0, 3.0, 2.0], [0.9, 0.4, 0.3], [False] * 3, False, 0.0, 0.0)
    unseen = query_features([6.0, 3.0, 2.0], [0.9, 0.4, 0.3], [False] * 3, False, 0.4, 1.0)
    assert answerable(unseen) < answerable(seen)
    assert answerable(unseen) < 0.5


def test_a_question_crediting_one_speaker_with_what_another_said_is_less_likely_answerable():
    # Same logits and coverages; only who says the lines that hold the query differs.
    coverages = [0.5, 0.9, 0.3]
    theirs = query_features([6.0, 5.5, 2.0], coverages, [True, False, True], True, 0.0, 0.0)
    own = query_features([6.0, 5.5, 2.0], coverages, [True, True, False], True, 0.0, 0.0)
    assert theirs["named_cover_lead"] == pytest.approx(0.5 - 0.9)
    assert own["named_cover_lead"] == pytest.approx(0.9 - 0.3)
    assert answerable(theirs) < answerable(own)
    # A query naming no speaker has no such evidence.
    assert query_features([6.0, 5.5], [0.5, 0.9], [False, False], False, 0.0, 0.0)["named_cover_lead"] == 0.0


def test_a_question_whose_named_speaker_only_asks_it_is_less_likely_answerable():
    # The named speaker's best line asks the question back; the statement
    # that holds the query's words is another speaker's (LoCoMo's
    # adversarial questions credit one person with what the other said).
    zs, coverages = [9.0, 7.0, 5.0, 4.0], [0.8, 0.7, 0.4, 0.3]
    asked = query_features(zs, coverages, [True, False, True, False], True, 0.0, 0.0,
                           asks=[True, False, False, False])
    said = query_features(zs, coverages, [True, False, True, False], True, 0.0, 0.0,
                          asks=[False, False, False, False])
    assert asked["asks_top"] == 1.0 and said["asks_top"] == 0.0
    assert asked["statement_lead"] == pytest.approx(5.0 - 7.0)
    assert said["statement_lead"] == pytest.approx(9.0 - 7.0)
    assert answerable(asked) < answerable(said)
    # Only one side says anything: the lead is capped, not unbounded.
    assert query_features(zs, coverages, [True] * 4, True, 0.0, 0.0, asks=[False] * 4)["statement_lead"] == 5.0
    # Without a named speaker there is no lead to weigh.
    assert query_features(zs, coverages, [False] * 4, False, 0.0, 0.0, asks=[False] * 4)["statement_lead"] == 0.0


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
