"""Scoring recall candidates: the paper's score(e, q, τ) made concrete, as a
calibrated probability.

Each candidate gets a logit, a weighted sum of what recall knows about it:

    z = BIAS + Σ WEIGHTS[f] · x_f  + log task(e) + log(1 − sup(e)) + W_REC · recency(e)

    x_bm25       the lexical score, / BM25_SCALE (fixed, not per query: a
                 strong match is strong in any query): BM25 over body (+ ctx)
                 and exact terms, plus the IDF of each rare query term the
                 event holds, counted once (stores/index/fulltext_search.py lexical)
    x_coverage   the share of the query's IDF the event's own text holds: an
                 event with the query's rarest terms beats one that repeats
                 its common terms, however long it is (BM25's length
                 normalisation favours short lines)
    x_vector     cosine to the query minus the median cosine of the query's
                 embedded candidates; 0 for an event with no vector (tool
                 output is not embedded: neutral, not penalised)
    x_speaker    1 when the query names the event's speaker (reducers/speakers.py)
    x_near       the lexical scores of the events just before and after it in
                 its session, over the query's best lexical score
    x_far        the same for the events two away (in conversation the
                 answer sits next to the question that prompted it)
    x_substance  how much the event says (characters, capped): "ok, thanks"
                 rarely answers anything
    x_near_vector  the best vector feature of the events just before and
                 after it (a terse reply is about what it answers)
    x_session    the best lexical score of another candidate in its session,
                 over the query's best
    x_bm25_rel   its lexical score over the query's best; x_top_lexical 1
                 for the query's best lexical match
    x_date       how close its time is to a date the query names ("on 16
                 November, 2023", "in May"): 1 inside, fading after and
                 before (reducers/query_dates.py); 0 when the query names none
    x_time_when, x_count_number, x_quoted_what  1 when the line names a
                 time and the query asks when, holds a number and the query
                 asks how many, quotes text and the query asks what / which /
                 who (reducers/turn_traits.py: bits the index keeps per line)
    x_named_asks 1 for the named speaker's line that asks a question: the
                 line that asks is rarely the one that answers
    x_window     the share of the query's IDF the event's window holds (its
                 own text or its neighbours', the index's ctx field; each
                 term once): a reply that never names its topic ("Super
                 good! So creamy") sits in an exchange that does, where
                 near / far weigh each neighbour's own match apart
(Neighbour and session scores are relative to the query's best: a long
query's BM25 is large everywhere, and a pushed context's query holds the
user's last lines, which are in the log next to their own neighbours.)

Every feature comes from the indexes (BM25 scores, the IDF each event
holds, stored vectors, the index's columns), so every candidate is scored
without reading its text; only the hits shown are read from the log.
score = σ(z) is the estimated probability that the hit is an answer to the
query: the weights are a logistic regression fitted on dev data (LoCoMo dev
questions, generated needles, and queries with no answer in the store;
`trace bench fit`), checked across held-out conversations. task ≥ 1 lifts
events that share terms with the session's open task; sup is the ledger's
demotion (0.5 superseded, 0.9 deleted: never removed). Hits are returned in
the order of the score they print."""
from __future__ import annotations

import math
from operator import attrgetter, mul
from dataclasses import dataclass

from reducers.query_dates import date_closeness
from reducers.turn_traits import ASKS, answer_bits

BM25_SCALE = 20.0
# Fitted by `trace bench fit` (listwise on LoCoMo dev + needles, then R@10);
# only their ratios matter: reducers/calibration.py turns z into probabilities.
WEIGHTS = {"bm25": 0.1339, "coverage": 1.6725, "vector": 0.55, "speaker": 3.1872, "near": 0.2598, "far": 0.0,
           "substance": 0.0612, "near_vector": 1.7013, "session": 0.7931, "bm25_rel": 1.1706, "top_lexical": 0.4493,
           "date": 4.8575, "time_when": 2.5389, "count_number": 0.0, "named_asks": -0.7431, "quoted_what": 1.4628,
           "window": 6.7182, "recency": 0.1}
BIAS = 0.0
FEATURES = ("bm25", "coverage", "vector", "speaker", "near", "far", "substance", "near_vector", "session",
            "bm25_rel", "top_lexical", "date", "time_when", "count_number", "named_asks", "quoted_what", "window")
SUBSTANCE_CHARS = 400
W_REC = 0.1
HALF_LIFE_DAYS = 30.0
TASK_BOOST = 0.25
# Ledger demotion: the share of a fact's probability taken away when the
# ledger marks it superseded / deleted.
SUPERSEDED, DELETED = 0.5, 0.9
EXACT_SCORE = 0.97          # an event holding the whole query verbatim
_SEQ, _LOGIT = attrgetter("seq"), attrgetter("z")


@dataclass(slots=True)
class Candidate:
    # What an index hit gives comes first, in this order: recall makes a few
    # hundred candidates a query, and a positional call costs under half of
    # one by keywords (stores/recall/recaller.py _candidate).
    seq: int
    gp: int                                     # session ordinal << 32 | position in the session
    ts_ms: int = 0
    kind: str = ""
    bm25: float = 0.0                           # the lexical query's score (BM25, plus the rare terms' IDF held)
    speaker_key: int = 0
    chars: int = 0
    hop: int = 1
    segment: int = 0            # where the event lives in the log
    offset: int = 0
    traits: int = 0             # what the line says (reducers/turn_traits.py), from the index
    held: float = 0.0                           # IDF of the query terms the event holds
    window: float = 0.0                         # ... that it or its neighbours hold (stores/index ctx)
    cosine: float | None = None
    task: float = 1.0
    tuning: float = 1.0                          # the nightly reflection's term boosts (reducers/reflection.py)
    sup: float = 0.0
    f: tuple = ()                                # the features, in FEATURES order
    rec: float = 0.0                             # recency in [0, 1]
    z: float = 0.0                               # logit
    score: float = 0.0                           # σ(z), or the MMR-adjusted score when diversity moved it
    exact: bool = False                          # holds the query verbatim
    floor: float = -math.inf    # a second-hop hit's logit is at least this (its seed's, decayed)
    measured: bool = False      # held / bm25 / cosine filled in against the query
    p_hit: float = 0.0          # the probability that this very hit is an answer (reducers/calibration.py)
    rerank: float | None = None  # --rerank: the stronger model's cosine to the query (stores/recall/rerank.py)


def score_all(cands: list[Candidate], named: set[int], total_idf: float,
              weights: dict | None = None, bias: float | None = None, spans: list = (), form: int = 0) -> list[Candidate]:
    """Fill every candidate's features and logit; best first. `named`: the
    speaker keys the query names; `total_idf`: the query's IDF, all terms;
    `spans`: the dates it names (reducers/query_dates.py); `form`: its
    form's bits (reducers/turn_traits.py question_form).
    (Plain locals, no per-candidate dicts: this runs for a few hundred
    candidates in every query.)"""
    cosines = sorted(c.cosine for c in cands if c.cosine is not None)
    median = cosines[len(cosines) // 2] if cosines else 0.0
    bm_at = {c.gp: c.bm25 for c in cands}
    cos_at = {c.gp: c.cosine - median for c in cands if c.cosine is not None}
    # The best two lexical scores of each session: a session that holds
    # other strong matches is more likely the one the question is about.
    best2: dict[int, list[float]] = {}
    for c in cands:
        top = best2.setdefault(c.gp >> 32, [0.0, 0.0])
        if c.bm25 > top[0]:
            top[1], top[0] = top[0], c.bm25
        elif c.bm25 > top[1]:
            top[1] = c.bm25
    top_bm25 = max((c.bm25 for c in cands), default=0.0)
    inv_top = 1.0 / top_bm25 if top_bm25 > 0 else 0.0
    get, vget = bm_at.get, cos_at.get
    newest = max((c.ts_ms for c in cands), default=0)
    per_ms = math.log(2) / (HALF_LIFE_DAYS * 86_400_000)
    inv_total = 1.0 / (total_idf or 1.0)
    inv_scale = 1.0 / BM25_SCALE
    inv_sub = 1.0 / SUBSTANCE_CHARS
    cap = SUBSTANCE_CHARS
    exp = math.exp
    # Which of a line's traits answer this question's form (turn_traits.answer_bits)
    time_bit, number_bit, quote_bit = answer_bits(form)
    for c in cands:
        gp, bm = c.gp, c.bm25
        traits = c.traits
        is_named = 1.0 if c.speaker_key in named and c.speaker_key else 0.0
        top = best2[gp >> 32]
        held = c.held * inv_total
        chars = c.chars
        cos = c.cosine
        before, after = vget(gp - 1, 0.0), vget(gp + 1, 0.0)     # max() of the two, without the call
        c.f = (bm * inv_scale,
               held if held < 1.0 else 1.0,
               cos - median if cos is not None else 0.0,
               is_named,
               (get(gp - 1, 0.0) + get(gp + 1, 0.0)) * inv_total,
               (get(gp - 2, 0.0) + get(gp + 2, 0.0)) * inv_total,
               (chars if chars < cap else cap) * inv_sub,
               after if after > before else before,
               (top[1] if bm >= top[0] else top[0]) * inv_total,
               bm * inv_top,
               1.0 if bm > 0 and bm >= top_bm25 else 0.0,
               date_closeness(c.ts_ms, spans) if spans else 0.0,
               1.0 if traits & time_bit else 0.0,
               1.0 if traits & number_bit else 0.0,
               is_named if traits & ASKS else 0.0,
               1.0 if traits & quote_bit else 0.0,
               window if (window := c.window * inv_total) < 1.0 else 1.0)
        ts = c.ts_ms
        if ts and newest:
            age = newest - ts
            c.rec = exp(-(age if age > 0 else 0) * per_ms)
        else:
            c.rec = 0.0
    settle_all(cands, weights, bias)
    by_logit(cands)
    return cands


def by_logit(cands: list[Candidate]) -> None:
    """Sort best first: logit descending, ties by seq. Two stable sorts on
    one attribute each give that order for a fraction of a (-z, seq) key
    tuple per candidate."""
    cands.sort(key=_SEQ)
    cands.sort(key=_LOGIT, reverse=True)


def settle_all(cands: list[Candidate], weights: dict | None = None, bias: float | None = None) -> None:
    """The logit and score of each candidate from its features, recency,
    the session's task and the ledger."""
    w = WEIGHTS if weights is None else weights
    ws = [w.get(name, 0.0) for name in FEATURES]
    b = BIAS if bias is None else bias
    rec = W_REC if "recency" not in w else w["recency"]
    log, exp = math.log, math.exp
    for c in cands:
        z = b + rec * c.rec + sum(map(mul, ws, c.f))        # the weighted sum in C: this runs for every candidate
        if c.task != 1.0:
            z += log(c.task)
        if c.tuning != 1.0:
            z += log(c.tuning)
        if c.sup:
            z += log(max(1.0 - c.sup, 1e-6))       # ledger demotion
        if z < c.floor:
            z = c.floor
        c.z = z
        c.score = 1.0 / (1.0 + exp(-z)) if z > -700.0 else 0.0


def features(c: Candidate) -> dict:
    """A candidate's features by name."""
    return dict(zip(FEATURES, c.f))


def shown_scores(c: Candidate) -> dict:
    """What a hit prints beside its score: the signals (fulltext and vector
    for people, recency, task), every feature and the logit."""
    out = {"fulltext": round(squash(c.bm25), 4), "vector": None if c.cosine is None else round(c.cosine, 4),
           "recency": round(c.rec, 4), "task": round(c.task * (1 - c.sup), 4)}
    if c.tuning != 1.0:
        out["tuning"] = round(c.tuning, 4)
    out.update({name: round(v, 4) for name, v in zip(FEATURES, c.f)})
    if c.rerank is not None:
        out["rerank"] = round(c.rerank, 4)
    out["logit"] = round(c.z, 4)
    out["p_hit"] = round(c.p_hit, 4)
    return out


def squash(bm25: float, k: float = 10.0) -> float:
    """BM25 squashed to [0, 1), for display."""
    return bm25 / (bm25 + k) if bm25 > 0 else 0.0


def task_factor(event_terms: set[str], task_terms: set[str]) -> float:
    """1 + TASK_BOOST × the share of the task's terms the event mentions."""
    if not task_terms or not event_terms:
        return 1.0
    return 1.0 + TASK_BOOST * len(event_terms & task_terms) / len(task_terms)


def mmr(ranked: list[Candidate], k: int, lam: float, similarity) -> list[Candidate]:
    """Maximal Marginal Relevance: pick k, trading relevance (λ) against
    similarity to what is already picked (1 − λ); λ = 1 keeps the order.
    A pick's score becomes the adjusted score that chose it, so hits print
    in the order of their scores (each round's best can only be lower than
    the round before: redundancy only grows). Each candidate's redundancy is
    updated only against the newest pick: O(k · pool) similarity calls."""
    if lam >= 1.0 or len(ranked) <= 1:
        return ranked[:k]
    pool = list(ranked)
    redundancy = [0.0] * len(pool)
    picked: list[Candidate] = []
    alive = list(range(len(pool)))
    while alive and len(picked) < k:
        best = max(alive, key=lambda i: pool[i].score - (1 - lam) * redundancy[i])
        chosen = pool[best]
        chosen.score = max(chosen.score - (1 - lam) * redundancy[best], 0.0)
        picked.append(chosen)
        alive.remove(best)
        for i in alive:
            redundancy[i] = max(redundancy[i], similarity(pool[i], chosen))
    return picked


def similarity_matrix(word_sets: list[set[str]], vectors: list) -> list[list[float]]:
    """Pairwise redundancy for MMR, all at once: cosine (clipped at 0) where
    both items have a vector, else Jaccard overlap of their word sets.
    Word sets become bitmasks (popcounts are cheap), and numpy is touched
    only when there are vectors, so a full-text recall never imports it."""
    vocab: dict[str, int] = {}
    masks, sizes = [], []
    for ws in word_sets:
        ids = [vocab.setdefault(w, len(vocab)) for w in ws]
        bits = bytearray(len(vocab) // 8 + 1)
        for i in ids:
            bits[i >> 3] |= 1 << (i & 7)
        masks.append(int.from_bytes(bits, "little"))
        sizes.append(len(ids))
    n = len(word_sets)
    sim = [[0.0] * n for _ in range(n)]
    for i in range(n):
        sim[i][i] = 1.0 if sizes[i] else 0.0
        for j in range(i + 1, n):
            inter = (masks[i] & masks[j]).bit_count()
            union = sizes[i] + sizes[j] - inter
            sim[i][j] = sim[j][i] = inter / union if union else 0.0
    have = [i for i, v in enumerate(vectors) if v is not None]
    if have:
        import numpy as np
        cos = np.clip(np.stack([vectors[i] for i in have]) @ np.stack([vectors[i] for i in have]).T,
                      0.0, None).tolist()
        for a, i in enumerate(have):
            for b, j in enumerate(have):
                sim[i][j] = cos[a][b]
    return sim
