"""Scoring recall candidates: the paper's score(e, q, τ) made concrete.

    base(e, q)  = bm25(e) / BM25_SCALE + W_VEC · vector(e)
    smoothed    = base + A1 · Σ base(neighbours ±1) + A2 · Σ base(neighbours ±2)
    score       = smoothed · (1 + W_REC · recency(e)) · task(e) · (1 − sup(e))

- BM25 enters linearly, on a fixed scale (not normalised per query: a
  strong lexical match should dominate, a weak one should stay weak, so the
  final score means the same across queries and can be gated on). The
  reported `fulltext` score is BM25 squashed to [0, 1) as bm25 / (bm25 + K);
- vector is the cosine similarity, clipped at 0;
- neighbours are the events just before and after in the same session: in
  conversation the answer sits next to its question (the index's `ctx` field
  does most of this; smoothing adds ~+0.01 recall@10 on LoCoMo dev);
- recency decays with age relative to the newest candidate (half-life
  HALF_LIFE_DAYS), a light tie-breaker;
- task ≥ 1 boosts events that share terms with the session's active task
  state and open loops; sup is 0.5 for a fact the ledger marks superseded,
  0.9 for one it marks deleted (never removed: still recallable).
Weights were tuned on LoCoMo dev (../shared/data/locomo-dev) — see README."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

K_BM25 = 10.0
BM25_SCALE = 20.0
VEC_CENTER = False
W_VEC = 0.15
A1, A2 = 0.15, 0.03
W_REC = 0.05
HALF_LIFE_DAYS = 30.0
TASK_BOOST = 0.25
SUPERSEDED, DELETED = 0.5, 0.9


@dataclass(slots=True)
class Candidate:
    seq: int
    session_id: str
    pos: int
    ts_ms: int = 0
    kind: str = ""
    bm25: float = 0.0
    cosine: float | None = None
    hop: int = 1
    task: float = 1.0
    sup: float = 0.0
    base: float = 0.0
    score: float = 0.0
    scores: dict = field(default_factory=dict)
    segment: int = 0            # where the event lives in the log
    offset: int = 0
    floor: float = 0.0          # a second-hop hit scores at least this (its seed's score, decayed)


def squash_bm25(bm25: float) -> float:
    return bm25 / (bm25 + K_BM25) if bm25 > 0 else 0.0


def recency(ts_ms: int, newest_ms: int) -> float:
    if not ts_ms or not newest_ms:
        return 0.0
    age_days = max(newest_ms - ts_ms, 0) / 86_400_000
    return math.exp(-math.log(2) * age_days / HALF_LIFE_DAYS)


def score_candidates(cands: list[Candidate], *, w_vec: float | None = None, a1: float | None = None,
                     a2: float | None = None, w_rec: float | None = None,
                     bm25_scale: float | None = None) -> list[Candidate]:
    """Fill base/score/scores on every candidate; returns them best first."""
    # Read the module constants at call time, so tuning can adjust them.
    w_vec = W_VEC if w_vec is None else w_vec
    a1, a2 = (A1 if a1 is None else a1), (A2 if a2 is None else a2)
    w_rec = W_REC if w_rec is None else w_rec
    bm25_scale = BM25_SCALE if bm25_scale is None else bm25_scale
    by_pos: dict[tuple[str, int], Candidate] = {}
    # Cosines of unrelated texts are far from 0 for averaged word vectors:
    # count only what a candidate has above the typical candidate.
    cosines = sorted(c.cosine for c in cands if c.cosine is not None)
    floor = cosines[len(cosines) // 2] if cosines and VEC_CENTER else 0.0
    for c in cands:
        ft = squash_bm25(c.bm25)
        vec = max((c.cosine or 0.0) - floor, 0.0) / (1.0 - floor) if c.cosine is not None else 0.0
        c.base = c.bm25 / bm25_scale + w_vec * vec
        c.scores = {"fulltext": ft, "vector": c.cosine}
        by_pos[(c.session_id, c.pos)] = c
    newest = max((c.ts_ms for c in cands), default=0)
    base_at = {key: c.base for key, c in by_pos.items()}
    for c in cands:
        sid, pos = c.session_id, c.pos
        near = base_at.get((sid, pos - 1), 0.0) + base_at.get((sid, pos + 1), 0.0)
        far = base_at.get((sid, pos - 2), 0.0) + base_at.get((sid, pos + 2), 0.0)
        smoothed = c.base + a1 * near + a2 * far
        rec = recency(c.ts_ms, newest)
        c.score = max(smoothed * (1 + w_rec * rec), c.floor) * c.task * (1 - c.sup)
        c.scores["recency"], c.scores["task"] = rec, c.task * (1 - c.sup)
    return sorted(cands, key=lambda c: (-c.score, c.seq))


def set_task(c: Candidate, task: float) -> None:
    """Give a scored candidate a new task factor without rescoring the pool
    (the score is a product, so the old factor divides out)."""
    c.score = c.score / c.task * task
    c.task = task
    c.scores["task"] = task * (1 - c.sup)


def task_factor(event_terms: set[str], task_terms: set[str]) -> float:
    """1 + TASK_BOOST × the share of the task's terms the event mentions."""
    if not task_terms or not event_terms:
        return 1.0
    return 1.0 + TASK_BOOST * len(event_terms & task_terms) / len(task_terms)


def mmr(ranked: list[Candidate], k: int, lam: float, similarity) -> list[Candidate]:
    """Maximal Marginal Relevance: pick k, trading relevance (λ) against
    similarity to what is already picked (1 − λ). λ = 1 keeps the order.
    Each candidate's redundancy is updated only against the newest pick, so
    the cost is O(k · pool) similarity calls."""
    if lam >= 1.0 or len(ranked) <= 1:
        return ranked[:k]
    top = ranked[0].score or 1.0
    pool = list(ranked)
    redundancy = [0.0] * len(pool)
    picked: list[Candidate] = []
    alive = list(range(len(pool)))
    while alive and len(picked) < k:
        best = max(alive, key=lambda i: lam * (pool[i].score / top) - (1 - lam) * redundancy[i])
        picked.append(pool[best])
        alive.remove(best)
        for i in alive:
            redundancy[i] = max(redundancy[i], similarity(pool[i], pool[best]))
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
