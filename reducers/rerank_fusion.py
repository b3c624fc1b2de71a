"""Combining the reranker's cosine with the ranking logit (placeholder weight, fitted below)."""
from __future__ import annotations

WEIGHT = 10.0


def rerank_logits(zs: list[float], cosines: list[float], weight: float = WEIGHT) -> list[float]:
    if not cosines:
        return list(zs)
    ref = sorted(cosines)[len(cosines) // 2]
    return [z + weight * (c - ref) for z, c in zip(zs, cosines)]
