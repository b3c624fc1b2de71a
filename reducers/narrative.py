"""The narrative baseline: replace an evicted span with an extractive
summary (no model). Sentences are scored by the span's own tf-idf and the
best are kept, in order, up to a token budget. It exists to be compared
with pointer markers in the same code path — and it loses what it leaves out."""
from __future__ import annotations

import math
import re
from collections import Counter

from reducers.terms import query_words
from reducers.tokens import count_tokens

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
SHARE = 0.15
MAX_TOKENS = 400


def summarize(events: list[dict], max_tokens: int | None = None) -> str:
    sentences = []
    for e in events:
        for s in _SENTENCE.split(e.get("text") or ""):
            s = s.strip()
            if len(s) >= 12:
                sentences.append(s)
    if not sentences:
        return ""
    span_tokens = sum(e.get("tokens") or 0 for e in events)
    budget = max_tokens or max(min(int(span_tokens * SHARE), MAX_TOKENS), 30)
    df: Counter[str] = Counter()
    bags = [set(query_words(s)) for s in sentences]
    for bag in bags:
        df.update(bag)
    n = len(sentences)
    scores = [sum(math.log(1 + n / df[w]) for w in bag) / (1 + len(bag)) ** 0.5 for bag in bags]
    chosen, used = [], 0
    for i in sorted(range(n), key=lambda i: -scores[i]):
        cost = count_tokens(sentences[i]) + 1
        if used + cost > budget:
            continue
        chosen.append(i)
        used += cost
    first, last = events[0]["seq"], events[-1]["seq"]
    return f"Summary of events {first}–{last}: " + " ".join(sentences[i] for i in sorted(chosen))
