"""Smart trim's relevance layer (memory-enhanced-compaction.md, layer 2):
BM25 of each candidate against the latest user request, over the pack's own
candidates as the corpus, so that when history must be trimmed the events
that bear on what is being asked now outlive unrelated ones of the same age.

Pure and small: documents are texts, the query a text; stopwords never
count. A query with fewer than MIN_QUERY_CHARS characters ("ok", "y")
carries nothing to rank by: every score is 0 and trimming falls back to
time order."""
from __future__ import annotations

import math
from collections import Counter

from reducers.terms import STOPWORDS, words

K1, B = 1.2, 0.75
MIN_QUERY_CHARS = 3
DOC_CHARS = 20_000            # a document's first 20k characters are enough to rank it


def _terms(text: str) -> list[str]:
    return [w for w in words(text[:DOC_CHARS]) if w not in STOPWORDS and len(w) > 1]


def relevance(docs: list[str], query: str) -> list[float]:
    """BM25 score of each doc for the query (0.0 where nothing matches)."""
    if len(query.strip()) < MIN_QUERY_CHARS or not docs:
        return [0.0] * len(docs)
    q = set(_terms(query))
    if not q:
        return [0.0] * len(docs)
    tfs = [Counter(t for t in _terms(d)) for d in docs]
    lengths = [sum(tf.values()) for tf in tfs]
    avg = (sum(lengths) / len(lengths)) or 1.0
    n = len(docs)
    df = {w: sum(1 for tf in tfs if w in tf) for w in q}
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in q if df[w]}
    scores = []
    for tf, length in zip(tfs, lengths):
        s = 0.0
        for w, weight in idf.items():
            f = tf.get(w)
            if f:
                s += weight * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scores.append(s)
    return scores
