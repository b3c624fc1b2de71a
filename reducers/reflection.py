"""Nightly reflection (paper 2.4, 8.3): read the recalls made since the
last sweep, find the queries recall served badly, and learn bounded term
boosts that recall applies next time.

- A query is *empty* when it returned nothing and *weak* when its best
  score (recall's calibrated probability) stayed under WEAK_SCORE.
- A content word of such queries that the store does hold (document
  frequency > 0, so ranking, not absence, is the problem) and that recurs
  in at least MIN_QUERIES of them gets its boost raised by STEP, up to
  MAX_BOOST; at most MAX_TERMS terms are boosted (the weakest boosts go
  first). Each change is one TUNE ledger row, revertable like any decision.
- Recall multiplies the odds of its best candidates by the product of the
  boosts of the terms each contains, capped at MAX_FACTOR (`tuning_factor`).
Pure: rows and document frequencies in, adjustments out."""
from __future__ import annotations

from dataclasses import dataclass

from reducers.terms import STOPWORDS, words

WEAK_SCORE = 0.25
MIN_QUERIES = 2
STEP = 1.1
MAX_BOOST = 1.5
MAX_FACTOR = 1.6
MAX_TERMS = 50


@dataclass
class WeakQuery:
    query: str
    best: float | None
    hits: int
    ts: str | None

    @property
    def reason(self) -> str:
        return "empty" if not self.hits else "weak"

    def as_json(self) -> dict:
        return {"query": self.query, "reason": self.reason, "best_score": self.best, "hits": self.hits, "ts": self.ts}


def weak_queries(rows) -> tuple[list[WeakQuery], int]:
    """(weak or empty queries, how many recalls were read)."""
    weak, seen = [], 0
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("query"), str):
            continue
        seen += 1
        results = row.get("results") if isinstance(row.get("results"), list) else []
        scores = [r.get("score") for r in results if isinstance(r, dict) and isinstance(r.get("score"), (int, float))]
        best = max(scores) if scores else None
        filters = row.get("filters") if isinstance(row.get("filters"), dict) else {}
        if filters.get("min_score") is not None and not results:
            best = None                        # a gate said no: still a miss worth knowing
        if best is None or best < WEAK_SCORE:
            weak.append(WeakQuery(row["query"][:500], round(best, 4) if best is not None else None, len(results),
                                  row.get("ts")))
    return weak, seen


def query_terms(query: str) -> set[str]:
    return {w for w in words(query) if len(w) > 2 and w not in STOPWORDS and not w.isdigit()}


def tune(weak: list[WeakQuery], doc_freq, boosts: dict[str, float]) -> list[tuple[str, float | None, float, int]]:
    """Adjustments [(term, old boost or None, new boost, queries)], in term
    order; `doc_freq(term)` says how many events hold the term."""
    counts: dict[str, int] = {}
    for q in weak:
        for t in query_terms(q.query):
            counts[t] = counts.get(t, 0) + 1
    changes = []
    for term in sorted(counts):
        n = counts[term]
        if n < MIN_QUERIES or doc_freq(term) <= 0:
            continue
        old = boosts.get(term)
        new = round(min(MAX_BOOST, (old or 1.0) * STEP), 4)
        if old is None or new > old:
            changes.append((term, old, new, n))
    # keep the table bounded: the strongest MAX_TERMS survive
    table = {**boosts, **{t: new for t, _, new, _ in changes}}
    if len(table) > MAX_TERMS:
        keep = set(sorted(table, key=lambda t: (-table[t], t))[:MAX_TERMS])
        changes = [c for c in changes if c[0] in keep]
        changes += [(t, boosts[t], None, 0) for t in sorted(boosts) if t not in keep]
    return changes


def tuning_factor(text_words: set[str], boosts: dict[str, float]) -> float:
    factor = 1.0
    for term, boost in boosts.items():
        if term in text_words:
            factor *= boost
    return min(factor, MAX_FACTOR)


def apply_tuning(candidates, events: dict[int, dict], boosts: dict[str, float]) -> None:
    """Set each candidate's tuning factor (recall's hook: the best of the
    ranked list, and the events it read for them); recall adds its log to
    the candidate's logit."""
    if not boosts:
        return
    for c in candidates:
        event = events.get(c.seq)
        if event is not None:
            c.tuning = tuning_factor(set(words((event.get("text") or "")[:4000])), boosts)
