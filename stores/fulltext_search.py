"""Reading the full-text index: BM25 search inside filters, lookups by
seq, an event's neighbours in its session, the newest event of some kinds,
and document frequencies. `FulltextIndex` (stores/fulltext.py) owns the
index's files and writing; this is the query side it inherits."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from reducers.terms import inflection_candidates

COMMON_SHARE = 0.05            # a query term in more events than this share only adds to scores...
COMMON_MIN_DOCS = 20_000       # ...once that is this many events (below it a full query is ~1 ms)


@dataclass(slots=True)
class FulltextHit:
    seq: int
    score: float
    segment: int
    offset: int
    pos: int
    session_id: str
    kind: str
    ts_ms: int


@dataclass(slots=True)
class Filters:
    session: str | None = None
    kinds: list[str] | None = None
    since_ms: int | None = None
    until_ms: int | None = None


def _filter_queries(schema, filters: Filters | None) -> list:
    import tantivy
    if filters is None:
        return []
    out = []
    if filters.session:
        out.append(tantivy.Query.term_query(schema, "session", filters.session))
    if filters.kinds:
        out.append(tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "kind", k)) for k in filters.kinds]))
    if filters.since_ms is not None or filters.until_ms is not None:
        out.append(tantivy.Query.range_query(schema, "ts", tantivy.FieldType.Integer,
                                             filters.since_ms, filters.until_ms))
    return out


class FulltextSearch:
    """Query methods over `self.open()`, which the index class provides
    (the opened Tantivy index, or None when there is none yet)."""

    _plain_analyzer = None

    def search(self, words: list[str], exact: list[str], filters: Filters | None = None, *,
               limit: int = 100, exact_boost: float = 2.0, ctx_boost: float = 0.5) -> list[FulltextHit]:
        """BM25 over body (+ ctx, weighted lower) and exact terms, inside the filters.

        In a big index a term found in more than COMMON_SHARE of the events
        (`commit`, `test`, `file` in agent logs) has a posting list of
        hundreds of thousands of entries and an IDF near zero. When the
        query also has rarer terms, those decide which events are
        candidates and the common terms only add to their scores, from the
        body (events matching nothing but common terms are left out, and a
        common term's near-zero share from `ctx` is skipped). A query of
        common terms alone runs in full."""
        import tantivy
        index = self.open()
        if index is None:
            return []
        schema = index.schema
        searcher = index.searcher()
        common_df = max(COMMON_MIN_DOCS, int(searcher.num_docs * COMMON_SHARE))
        rare, common, common_ctx = [], [], []
        n_docs = searcher.num_docs
        for token in dict.fromkeys(t for w in words for t in self._plain(w)):
            # ctx holds other events' text: a spelling no body holds is in no ctx either
            in_body = [(f, df) for f in _forms(token) if (df := searcher.doc_freq("body", f))]
            body, body_df = _any_spelling(schema, "body", in_body, n_docs, 1.0)
            in_ctx = [(f, df) for f, _ in in_body if (df := searcher.doc_freq("ctx", f))]
            ctx, ctx_df = _any_spelling(schema, "ctx", in_ctx, n_docs, ctx_boost)
            if body is None and ctx is None:
                continue
            if max(body_df, ctx_df) > common_df:
                common += [q for q in (body,) if q is not None]
                common_ctx += [q for q in (ctx,) if q is not None]
            else:
                rare += [q for q in (body, ctx) if q is not None]
        for term in exact:
            q = tantivy.Query.boost_query(
                tantivy.Query.term_query(schema, "exact", term, index_option="basic"), exact_boost)
            (common if searcher.doc_freq("exact", term) > common_df else rare).append(q)
        should = lambda qs: tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in qs])
        if rare and common:
            # A common term's share from ctx has IDF ~0: skip that posting
            # list of most of the index.
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, should(rare)),
                                                 (tantivy.Occur.Should, should(common))])
        elif rare or common:
            query = should(rare or common + common_ctx)
        else:
            return []
        return self._run(query, filters, limit)

    def _plain(self, word: str) -> list[str]:
        """A word as the index's tokenizer splits it (lowercased, not stemmed)."""
        if self._plain_analyzer is None:
            self._plain_analyzer = _word_analyzer(stem=False)
        return self._plain_analyzer.analyze(word)

    def lookup(self, seqs: list[int], filters: Filters | None = None) -> list[FulltextHit]:
        """Locate events by seq (those inside the filters), score 0."""
        import tantivy
        index = self.open()
        if index is None or not seqs:
            return []
        q = tantivy.Query.term_set_query(index.schema, "seq", list(seqs))
        return [self._zero(h) for h in self._run(q, filters, len(seqs))]

    def neighbours(self, anchors: list[tuple[str, int]], radius: int,
                   filters: Filters | None = None) -> list[FulltextHit]:
        """Events within `radius` positions of each (session, pos) anchor."""
        import tantivy
        index = self.open()
        if index is None or not anchors:
            return []
        schema = index.schema
        clauses = []
        for session, pos in anchors:
            clauses.append((tantivy.Occur.Should, tantivy.Query.boolean_query([
                (tantivy.Occur.Must, tantivy.Query.term_query(schema, "session", session)),
                (tantivy.Occur.Must, tantivy.Query.range_query(
                    schema, "pos", tantivy.FieldType.Unsigned, max(pos - radius, 0), pos + radius,
                    use_inverted_index=True))])))
        return [self._zero(h) for h in self._run(tantivy.Query.boolean_query(clauses), filters,
                                                 len(anchors) * (2 * radius + 1))]

    def latest(self, session: str, kinds: list[str], words: list[str] | None = None) -> FulltextHit | None:
        """The newest event of these kinds in a session (optionally matching words)."""
        import tantivy
        index = self.open()
        if index is None:
            return None
        schema = index.schema
        parts = [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "session", session)),
                 (tantivy.Occur.Must, tantivy.Query.boolean_query(
                     [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "kind", k)) for k in kinds]))]
        tokens = [f for w in words or () for t in self._plain(w) for f in _forms(t)]
        if tokens:
            parts.append((tantivy.Occur.Must, tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t)) for t in tokens])))
        searcher = index.searcher()
        res = searcher.search(tantivy.Query.boolean_query(parts), 1, order_by_field="seq")
        if not res.hits:
            return None
        return self._hit(searcher, 0.0, res.hits[0][1])

    def newest(self, kinds: list[str], session: str | None = None, limit: int = 1000) -> list[FulltextHit]:
        """The newest events of these kinds (in one session, or all), newest first."""
        import tantivy
        index = self.open()
        if index is None:
            return []
        schema = index.schema
        parts = [(tantivy.Occur.Must, tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "kind", k)) for k in kinds]))]
        if session:
            parts.append((tantivy.Occur.Must, tantivy.Query.term_query(schema, "session", session)))
        searcher = index.searcher()
        res = searcher.search(tantivy.Query.boolean_query(parts), limit, order_by_field="seq")
        return [self._hit(searcher, 0.0, addr) for _, addr in res.hits]

    def _run(self, query, filters: Filters | None, limit: int) -> list[FulltextHit]:
        import tantivy
        index = self.open()
        clauses = [(tantivy.Occur.Must, query)]
        for f in _filter_queries(index.schema, filters):      # filters narrow, they never score
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)))
        if len(clauses) > 1:
            query = tantivy.Query.boolean_query(clauses)
        searcher = index.searcher()
        return [self._hit(searcher, score, addr) for score, addr in searcher.search(query, limit).hits]

    @staticmethod
    def _hit(searcher, score: float, addr) -> FulltextHit:
        doc = searcher.doc(addr)
        return FulltextHit(seq=doc["seq"][0], score=score, segment=doc["seg"][0], offset=doc["off"][0],
                           pos=doc["pos"][0], session_id=doc["session"][0], kind=doc["kind"][0],
                           ts_ms=doc["ts"][0])

    @staticmethod
    def _zero(hit: FulltextHit) -> FulltextHit:
        hit.score = 0.0
        return hit

    def doc_freq(self, term: str) -> int:
        index = self.open()
        return index.searcher().doc_freq("exact", term) if index is not None else 0

    def word_doc_freq(self, word: str) -> int:
        """About how many events hold `word` in any spelling with its stem
        (an upper bound: an event with two spellings counts twice)."""
        index = self.open()
        if index is None:
            return 0
        tokens = self._plain(word)
        searcher = index.searcher()
        return min(sum(searcher.doc_freq("body", f) for f in _forms(tokens[0])),
                   searcher.num_docs) if tokens else 0

    def session_locations(self, session_id: str, after_seq: int = 0, page: int = 10_000):
        """(seq, segment, offset) of a session's events after `after_seq`, in seq order."""
        import tantivy
        index = self.open()
        if index is None:
            return
        schema = index.schema
        query = tantivy.Query.boolean_query([
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, "session", session_id)),
            (tantivy.Occur.Must, tantivy.Query.range_query(schema, "seq", tantivy.FieldType.Unsigned,
                                                           after_seq + 1, None))])
        searcher = index.searcher()
        offset = 0
        while True:
            hits = searcher.search(query, page, order_by_field="seq", order=tantivy.Order.Asc, offset=offset).hits
            for _, addr in hits:
                doc = searcher.doc(addr)
                yield doc["seq"][0], doc["seg"][0], doc["off"][0]
            if len(hits) < page:
                return
            offset += page

    def num_docs(self) -> int:
        index = self.open()
        return index.searcher().num_docs if index is not None else 0


SPELLING_TIE = 0.4       # a second spelling in one event adds 0.4 of its score (BM25's tf 1 -> 2 adds ~0.375)


def _any_spelling(schema, field: str, dfs: list[tuple[str, int]], n_docs: int, boost: float):
    """One word in any of its spellings (with their document frequencies in
    `field`, all > 0): the best-scoring spelling an event holds, each
    weighted to the IDF of all spellings together (as a stemmed index would
    score the stem). (query or None, events holding any)."""
    import tantivy
    if not dfs:
        return None, 0
    together = min(sum(df for _, df in dfs), n_docs)
    parts = [tantivy.Query.boost_query(tantivy.Query.term_query(schema, field, f),
                                       boost * _idf(together, n_docs) / _idf(df, n_docs)) for f, df in dfs]
    query = parts[0] if len(parts) == 1 else tantivy.Query.disjunction_max_query(parts, SPELLING_TIE)
    return query, together


def _idf(df: int, n_docs: int) -> float:
    """Tantivy's BM25 IDF."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


@lru_cache(maxsize=4096)
def _forms(token: str) -> list[str]:
    """`token` and the spellings that share its English stem."""
    stem = _stemmer().analyze(token)
    return [c for c in inflection_candidates(token) if c == token or _stemmer().analyze(c) == stem]


@lru_cache(maxsize=1)
def _stemmer():
    return _word_analyzer(stem=True)


def _word_analyzer(stem: bool):
    """Tantivy's `default` analyzer (simple, remove_long 40, lowercase), or
    its `en_stem` (the same plus the English stemmer)."""
    import tantivy
    builder = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
               .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase()))
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()
