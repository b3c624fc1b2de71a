"""`--rerank`: the stronger model's cosine folded into the ranking logit.

The reranked candidates' logits become z + WEIGHT · (cos − median cos of
the reranked), so the model reorders them by how far it sets each apart
from the rest, on the logit's own scale (reducers/calibration.py then
scores the list as it does any other). The median makes the shift
relative: e5's cosines crowd into a narrow band (0.7–0.9) whatever the
query. WEIGHT is fitted on LoCoMo dev (R@10, each conversation left out
in turn) and generated needles; see README "A stronger ranker"."""
from __future__ import annotations

WEIGHT = 2.0


def rerank_logits(zs: list[float], cosines: list[float], weight: float = WEIGHT) -> list[float]:
    """New logits for candidates with logits `zs` and model cosines `cosines`."""
    if not cosines:
        return list(zs)
    ref = sorted(cosines)[len(cosines) // 2]
    return [z + weight * (c - ref) for z, c in zip(zs, cosines)]
