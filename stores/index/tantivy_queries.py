"""Tantivy query shapes the full-text search builds from: an OR of seqs,
a union, a required query scored by optional ones, an event holding a term
in any spelling, and Tantivy's BM25 IDF (stores/index/fulltext_search.py
is their one user)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stores.index.fulltext_search import QueryTerm

SPELLING_TIE = 0.4       # a second spelling in one event adds 0.4 of its score (BM25's tf 1 -> 2 adds ~0.375)


def seqs_query(schema, seqs: list[int]):
    """The events with these seqs, score 0. (A term-set query scans the
    whole seq dictionary: ~4 ms at 100k events against ~0.6 ms for an OR
    of single-term lookups.)"""
    import tantivy
    return tantivy.Query.const_score_query(tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "seq", s)) for s in seqs]), 0.0)


def any_of(queries: list):
    """Events matching any of `queries` (one query stays itself)."""
    import tantivy
    return queries[0] if len(queries) == 1 else tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, q) for q in queries])


def scored_by(required, optional: list):
    """`required`'s events, each scored by its own score plus the sum of
    those of the `optional` queries it matches. (Beside a Must, several
    Shoulds are a union that decodes and scores every posting of each
    common term in every 4,096-event window a required event falls in;
    here the optionals are chained one at a time onto a match-all of score
    0, each seeked to the required events only: the neighbours' query at
    1M events 0.5 ms instead of 1.3, with the same scores. The required
    query, often hundreds of terms, is wrapped once: each wrapping copies
    it.)"""
    import tantivy
    if not optional:
        return required
    chain = optional[0]
    if len(optional) > 1:
        chain = tantivy.Query.const_score_query(tantivy.Query.all_query(), 0.0)
        for q in optional:
            chain = tantivy.Query.boolean_query([(tantivy.Occur.Must, chain), (tantivy.Occur.Should, q)])
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, required), (tantivy.Occur.Should, chain)])


def holding(schema, term: QueryTerm):
    """Matches the events whose text holds the term in any spelling."""
    import tantivy
    if term.exact:
        return tantivy.Query.term_query(schema, "exact", next(iter(term.forms)), index_option="basic")
    forms = [tantivy.Query.term_query(schema, "body", f, index_option="basic") for f in sorted(term.forms)]
    return forms[0] if len(forms) == 1 else tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in forms])


def window_holding(schema, term: QueryTerm):
    """Matches the events whose text or `ctx` (the neighbours' text) holds
    the term in any spelling: what the exchange around a line is about."""
    import tantivy
    if term.exact:
        return holding(schema, term)
    forms = [tantivy.Query.term_query(schema, field, f, index_option="basic")
             for f in sorted(term.forms) for field in ("body", "ctx")]
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in forms])


def any_spelling(schema, field: str, dfs: list[tuple[str, int]], n_docs: int, boost: float):
    """One word in any of its spellings (with their document frequencies in
    `field`, all > 0): the best-scoring spelling an event holds, each
    weighted to the IDF of all spellings together (as a stemmed index would
    score the stem). (query or None, events holding any)."""
    import tantivy
    if not dfs:
        return None, 0
    together = min(sum(df for _, df in dfs), n_docs)
    parts = [tantivy.Query.boost_query(tantivy.Query.term_query(schema, field, f),
                                       boost * bm25_idf(together, n_docs) / bm25_idf(df, n_docs)) for f, df in dfs]
    query = parts[0] if len(parts) == 1 else tantivy.Query.disjunction_max_query(parts, SPELLING_TIE)
    return query, together


def bm25_idf(df: int, n_docs: int) -> float:
    """Tantivy's BM25 IDF."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
