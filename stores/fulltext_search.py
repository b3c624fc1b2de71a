"""Reading the full-text index: BM25 search inside filters, lookups by
seq, an event's neighbours in its session, the newest event of some kinds,
and document frequencies. `FulltextIndex` (stores/fulltext.py) owns the
index's files and writing; this is the query side it inherits."""
from __future__ import annotations

from dataclasses import dataclass

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

    _stemmer = None
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
        # Both analyzers split a word alike; `body` is stemmed, `ctx` is not.
        pairs = dict.fromkeys(p for w in words for p in zip(self._stem(w), self._plain(w)))
        for stem, plain in pairs:
            body = tantivy.Query.term_query(schema, "body", stem)
            ctx = tantivy.Query.boost_query(tantivy.Query.term_query(schema, "ctx", plain), ctx_boost)
            if max(searcher.doc_freq("body", stem), searcher.doc_freq("ctx", plain)) > common_df:
                common.append(body)
                common_ctx.append(ctx)
            else:
                rare += [body, ctx]
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
        """A word as the `ctx` field's tokenizer splits it (not stemmed)."""
        if self._plain_analyzer is None:
            self._plain_analyzer = _word_analyzer(stem=False)
        return self._plain_analyzer.analyze(word)

    def _stem(self, word: str) -> list[str]:
        """A word as the index's en_stem tokenizer splits and stems it."""
        if self._stemmer is None:
            self._stemmer = _word_analyzer(stem=True)
        return self._stemmer.analyze(word)

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
        tokens = [t for w in words or () for t in self._stem(w)]
        if tokens:
            parts.append((tantivy.Occur.Must, tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t)) for t in tokens])))
        searcher = index.searcher()
        res = searcher.search(tantivy.Query.boolean_query(parts), 1, order_by_field="seq")
        if not res.hits:
            return None
        return self._hit(searcher, 0.0, res.hits[0][1])

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
        """Events whose body holds `word`, stemmed as the index stems it."""
        index = self.open()
        if index is None:
            return 0
        tokens = self._stem(word)
        return index.searcher().doc_freq("body", tokens[0]) if tokens else 0

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


def _word_analyzer(stem: bool):
    """Tantivy's `default` analyzer (simple, remove_long 40, lowercase), or
    its `en_stem` (the same plus the English stemmer)."""
    import tantivy
    builder = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
               .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase()))
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()
