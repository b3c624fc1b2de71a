"""The zero-dependency embedder: signed feature hashing of words and word
bigrams into a fixed number of dimensions, L2-normalised. Weak on meaning
(it knows nothing of synonyms) but deterministic, instant and always there."""
from __future__ import annotations

import hashlib

import numpy as np

from reducers.terms import words

DIM = 256


def hash_embed(texts: list[str], dim: int = DIM, max_words: int = 512) -> np.ndarray:
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        ws = words(text, pairs=False)[:max_words]     # as the vectors already stored were made
        for feature in (*ws, *(f"{a} {b}" for a, b in zip(ws, ws[1:]))):
            h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            out[row, h % dim] += 1.0 if (h >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(out[row]))
        if norm:
            out[row] /= norm
    return out
