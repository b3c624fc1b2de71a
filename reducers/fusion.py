"""Scoring recall candidates: the paper's score(e, q, τ) made concrete, as a
calibrated probability.

Each candidate gets a logit, a weighted sum of what recall knows about it:

    z = BIAS + Σ WEIGHTS[f] · x_f  + log task(e) + log(1 − sup(e)) + W_REC · recency(e)

    x_bm25       BM25 over body + ctx + exact terms, / BM25_SCALE (fixed, not
                 per query: a strong match is strong in any query)
    x_vector     cosine to the query minus the median cosine of the query's
                 embedded candidates; 0 for an event with no vector (tool
                 output is not embedded: neutral, not penalised)
    x_speaker    1 when the query names the event's speaker (reducers/speakers.py)
    x_near       BM25 of the events just before and after it in its session
    x_far        BM25 of the events two away (in conversation the answer sits
                 next to the question that prompted it)
    x_coverage   the share of the query's IDF the event's own text holds: an
                 event with the query's rarest terms beats one that repeats
                 its common terms, however long it is (BM25's length
                 normalisation favours short lines)
    x_substance  how much the event says (characters, capped): "ok, thanks"
                 rarely answers anything

The first five are known for every candidate (stage 1 picks a pool from
them, with POOL_WEIGHTS); coverage and substance need the event's text, read only for the pool
(stage 2). score = σ(z) is the estimated probability that the hit is an
answer to the query: the weights are a logistic regression fitted on dev
data (LoCoMo dev questions, generated needles, and queries with no answer
in the store; `trace bench fit`), checked across held-out conversations.
task ≥ 1 lifts events that share terms with the session's open task; sup
is the ledger's demotion (0.5 superseded, 0.9 deleted: never removed).
Hits are returned in the order of the score they print."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

BM25_SCALE = 20.0
# Fitted by `trace bench fit` on LoCoMo dev + needles + no-answer queries.
WEIGHTS = {"bm25": 0.1253, "vector": 0.282, "speaker": 1.203, "near": 1.203, "far": 0.4511,
           "coverage": 2.005, "substance": 1.203}
BIAS = -6.5288
# Stage 1 picks the pool with these (BM25 carries the lexical weight there;
# in the full model coverage takes most of it, and coverage needs the text).
POOL_WEIGHTS = {"bm25": 1.0, "vector": 1.5, "speaker": 1.2, "near": 0.4, "far": 0.2, "coverage": 2.0}
STAGE1 = ("bm25", "vector", "speaker", "near", "far")
STAGE2 = ("coverage", "substance")      # coverage is in stage 1 too when the index's covering query found the event
SUBSTANCE_CHARS = 400
W_REC = 0.1
HALF_LIFE_DAYS = 30.0
TASK_BOOST = 0.25
# Ledger demotion: the share of a fact's probability taken away when the
# ledger marks it superseded / deleted.
SUPERSEDED, DELETED = 0.5, 0.9
EXACT_SCORE = 0.97          # an event holding the whole query verbatim


@dataclass(slots=True)
class Candidate:
    seq: int
    session_id: str
    pos: int
    ts_ms: int = 0
    kind: str = ""
    bm25: float = 0.0
    cosine: float | None = None
    speaker: str = ""
    coverage: float | None = None               # from the index, when it knew (stage 1)
    hop: int = 1
    task: float = 1.0
    sup: float = 0.0
    x: dict = field(default_factory=dict)       # the features, by name
    z: float = 0.0                               # logit
    score: float = 0.0                           # σ(z), or the MMR-adjusted score when diversity moved it
    exact: bool = False                          # holds the query verbatim
    scores: dict = field(default_factory=dict)
    segment: int = 0            # where the event lives in the log
    offset: int = 0
    floor: float = -math.inf    # a second-hop hit's logit is at least this (its seed's, decayed)


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))


def recency(ts_ms: int, newest_ms: int) -> float:
    if not ts_ms or not newest_ms:
        return 0.0
    age_days = max(newest_ms - ts_ms, 0) / 86_400_000
    return math.exp(-math.log(2) * age_days / HALF_LIFE_DAYS)


def stage1(cands: list[Candidate], named: set[str], weights: dict | None = None) -> list[Candidate]:
    """Fill the features known without the text and a first logit (with
    POOL_WEIGHTS); best first."""
    w = POOL_WEIGHTS if weights is None else weights
    cosines = sorted(c.cosine for c in cands if c.cosine is not None)
    median = cosines[len(cosines) // 2] if cosines else 0.0
    bm_at = {(c.session_id, c.pos): c.bm25 for c in cands}
    newest = max((c.ts_ms for c in cands), default=0)
    for c in cands:
        sid, pos = c.session_id, c.pos
        c.x = {"bm25": c.bm25 / BM25_SCALE,
               "vector": (c.cosine - median) if c.cosine is not None else 0.0,
               "speaker": 1.0 if c.speaker and c.speaker in named else 0.0,
               "near": (bm_at.get((sid, pos - 1), 0.0) + bm_at.get((sid, pos + 1), 0.0)) / BM25_SCALE,
               "far": (bm_at.get((sid, pos - 2), 0.0) + bm_at.get((sid, pos + 2), 0.0)) / BM25_SCALE,
               "coverage": c.coverage or 0.0}
        rec = recency(c.ts_ms, newest)
        c.scores = {"fulltext": squash(c.bm25), "vector": c.cosine, "recency": rec}
        _settle(c, w)
    return sorted(cands, key=lambda c: (-c.z, c.seq))


def stage2(c: Candidate, coverage: float, chars: int, weights: dict | None = None) -> None:
    """Add what the text tells (coverage of the query's IDF, substance) to a pooled candidate."""
    c.x["coverage"] = coverage
    c.x["substance"] = min(chars, SUBSTANCE_CHARS) / SUBSTANCE_CHARS
    _settle(c, WEIGHTS if weights is None else weights)


def _settle(c: Candidate, w: dict) -> None:
    z = BIAS + sum(w.get(name, 0.0) * value for name, value in c.x.items())
    z += W_REC * c.scores.get("recency", 0.0)
    z += math.log(c.task)
    z += math.log(max(1.0 - c.sup, 1e-6))       # ledger demotion
    c.z = max(z, c.floor)
    c.score = sigmoid(c.z)
    c.scores["task"] = c.task * (1 - c.sup)


def set_task(c: Candidate, task: float, weights: dict | None = None) -> None:
    c.task = task
    _settle(c, WEIGHTS if weights is None else weights)


def squash(bm25: float, k: float = 10.0) -> float:
    """BM25 squashed to [0, 1), for display."""
    return bm25 / (bm25 + k) if bm25 > 0 else 0.0


def coverage(text_stems: set[str], query_idf: dict[str, float]) -> float:
    """The share of the query's IDF mass whose terms the text holds."""
    total = sum(query_idf.values())
    if not total:
        return 0.0
    return sum(v for stem, v in query_idf.items() if stem in text_stems) / total


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
