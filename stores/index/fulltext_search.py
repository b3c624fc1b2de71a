"""Reading the full-text index: BM25 search inside filters, lookups by
seq, an event's neighbours in its session, the newest event of some kinds,
and document frequencies. `FulltextIndex` (stores/index/fulltext.py) owns the
index's files and writing; this is the query side it inherits.

A hit's numbers (where it lives in the log, its session key, position,
kind, speaker key, time, length) come from its seq (one fast column, read
once per query for all hits together) and the hit records by seq
(stores/hit_records), or from eight columns when the records cannot be
trusted; no stored document is fetched."""
from __future__ import annotations

from dataclasses import dataclass

from reducers.event_kinds import KINDS
from reducers.folding import fold
from stores.hit_records import COLUMNS as HIT_COLUMNS, HitRecords
from stores.index.spellings import spellings, word_analyzer
from stores.index.tantivy_queries import any_of, any_spelling, bm25_idf, holding, scored_by, seqs_query, window_holding

COMMON_SHARE = 0.05            # a query term in more events than this share only adds to scores...
COMMON_MIN_DOCS = 20_000       # ...once that is this many events (below it a full query is ~1 ms)
COVER_SHARE = 0.002            # the rare-term bonus counts terms in at most this share of the events...
COVER_MIN_DOCS = 1_000         # ...or this many (their posting lists are short: the bonus is nearly free)
LATEST_SCAN = 1_000            # latest() finds up to this many matches unordered, then picks the newest
KIND_CODES = {kind: i for i, kind in enumerate(KINDS)}      # the `kno` column
KIND_NAMES = {i: kind for kind, i in KIND_CODES.items()}


@dataclass(slots=True)
class FulltextHit:
    seq: int
    score: float
    segment: int
    offset: int
    gp: int                     # the session's ordinal in the index << 32 | the event's position in it
    kind: str
    ts_ms: int
    speaker_key: int = 0        # key63 of the speaker label, 0 for none
    chars: int = 0              # length of the indexed text
    traits: int = 0             # what a dialogue line says (reducers/turn_traits.py)


@dataclass(slots=True, frozen=True)
class QueryTerm:
    forms: frozenset[str]       # the spellings (or the exact term) that count as holding it
    idf: float
    exact: bool
    dfs: tuple = ()             # (spelling, events holding it in body) for a word
    df: int = 0                 # events holding any spelling (at most the index size)


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
    _records: HitRecords | None = None

    def _hit_records(self) -> HitRecords:
        if self._records is None:
            self._records = HitRecords(self.dir)
        return self._records

    def search(self, words: list[str], exact: list[str], filters: Filters | None = None, *,
               limit: int = 100, exact_boost: float = 2.0, ctx_boost: float = 0.5) -> list[FulltextHit]:
        """BM25 over body (+ ctx, weighted lower) and exact terms, inside the filters."""
        return self.lexical(self.query_terms(words, exact), filters, limit,
                            exact_boost=exact_boost, ctx_boost=ctx_boost)

    def lexical(self, terms: list[QueryTerm], filters: Filters | None, limit: int, *, cover: float = 0.0,
                exact_boost: float = 2.0, ctx_boost: float = 0.5) -> list[FulltextHit]:
        """One query, score = BM25 over body (+ ctx, weighted lower; 0 leaves
        ctx out) and exact terms, plus `cover` × the IDF of each rare query
        term (in at most COVER_SHARE of the events) the event holds, counted
        once however long the event is: a rare term in a long tool output is
        not buried by BM25's length normalisation under short lines that
        repeat common terms.

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
        if index is None or not terms:
            return []
        schema = index.schema
        searcher = index.searcher()
        n_docs = searcher.num_docs
        common_df = self._common_df(n_docs)
        cover_df = max(COVER_MIN_DOCS, int(n_docs * COVER_SHARE))
        rare, common, common_ctx = [], [], []
        for t in terms:
            if t.exact:
                term = next(iter(t.forms))
                parts = [tantivy.Query.boost_query(
                    tantivy.Query.term_query(schema, "exact", term, index_option="basic"), exact_boost)]
                ctx = None
            else:
                body, _ = any_spelling(schema, "body", list(t.dfs), n_docs, 1.0)
                ctx = None
                if ctx_boost:
                    # ctx holds other events' text: a spelling no body holds is in no ctx either
                    in_ctx = [(f, df) for f, _ in t.dfs if (df := searcher.doc_freq("ctx", f))]
                    ctx, _ = any_spelling(schema, "ctx", in_ctx, n_docs, ctx_boost)
                parts = [body]
            if t.df > common_df:
                common += parts
                common_ctx += [ctx] if ctx is not None else []
                continue
            if cover and t.df <= cover_df:
                parts.append(tantivy.Query.const_score_query(holding(schema, t), cover * t.idf))
            rare += parts + ([ctx] if ctx is not None else [])
        if rare and common:
            # A common term's share from ctx has IDF ~0: skip that posting
            # list of most of the index. The common terms are optional
            # clauses seeked to the rare matches (scored_by): 2.5 -> 1.0
            # ms a query at 1M events, the same scores.
            query = scored_by(any_of(rare), common)
        elif rare or common:
            query = any_of(rare or common + common_ctx)
        else:
            return []
        return self._run(query, filters, limit)

    def held_idf(self, seqs: list[int], terms: list[QueryTerm]) -> dict[int, float]:
        """For each of `seqs`, the IDF of the query terms its text holds
        (each counted once, 0 for none): one query, the events restricted
        to `seqs`."""
        return self._held_by(seqs, terms, holding)

    def window_held_idf(self, seqs: list[int], terms: list[QueryTerm]) -> dict[int, float]:
        """For each of `seqs`, the IDF of the query terms its text or its
        neighbours' (the ctx field) hold, each counted once: a reply that
        never names its topic ("Super good! So creamy") sits in an exchange
        that does."""
        return self._held_by(seqs, terms, window_holding)

    def _held_by(self, seqs: list[int], terms: list[QueryTerm], clause) -> dict[int, float]:
        """One query, the events restricted to `seqs`, each scored by the
        IDF of the terms `clause(schema, term)` finds in it."""
        import tantivy
        index = self.open()
        if index is None or not seqs or not terms:
            return {}
        schema = index.schema
        query = scored_by(seqs_query(schema, seqs),
                           [tantivy.Query.const_score_query(clause(schema, t), t.idf) for t in terms])
        searcher = index.searcher()
        res = searcher.search(query, len(seqs), count=False).hits
        found = searcher.fast_field_values("seq", [addr for _, addr in res])
        return {seq: score for seq, (score, _) in zip(found, res)}

    def _common_df(self, n_docs: int) -> int:
        return max(COMMON_MIN_DOCS, int(n_docs * COMMON_SHARE))

    def _plain(self, word: str) -> list[str]:
        """A word as the index holds it: folded (reducers/folding.py), split
        by the index's tokenizer, lowercased, not stemmed."""
        if self._plain_analyzer is None:
            self._plain_analyzer = word_analyzer(stem=False)
        return self._plain_analyzer.analyze(fold(word))

    def _names_query(self, schema, names) -> object | None:
        """Events whose body holds one of these names whole (a tool's name
        leads its call's body): a one-word name as the body's word, a name
        the word tokenizer splits (`update_plan`) as the exact field's term.
        Its words one by one would match any body saying "update" or "plan".
        None when there are no names."""
        import tantivy
        queries = []
        for name in dict.fromkeys(fold(n.lower()) for n in names):
            words = self._plain(name)
            if words == [name]:
                queries.append(tantivy.Query.term_query(schema, "body", name))
            elif words:
                queries.append(tantivy.Query.term_query(schema, "exact", name))
        return any_of(queries) if queries else None

    def lookup(self, seqs: list[int], filters: Filters | None = None) -> list[FulltextHit]:
        """Locate events by seq (those inside the filters), score 0."""
        index = self.open()
        if index is None or not seqs:
            return []
        return self._run(seqs_query(index.schema, seqs), filters, len(seqs))

    def neighbours(self, anchors: list[int], radius: int, filters: Filters | None = None, *,
                   also: list[int] = (), held: list[QueryTerm] | None = None,
                   seqs: list[int] = ()) -> list[FulltextHit]:
        """Events within `radius` positions of each anchor (its `gp`) in its
        session, score 0. With `held` (a query's terms), also the events at
        the `also` positions and those with the given `seqs` (lookup()'s
        work), each scored by the IDF of those terms it holds — held_idf's
        figures, found in this one query instead of more that locate the
        same events again by seq (a third of the index work of a query at
        1M events)."""
        import tantivy
        index = self.open()
        if index is None or not anchors:
            return []
        schema = index.schema
        wanted = {g for gp in anchors for g in range(gp - min(radius, gp & 0xFFFFFFFF), gp + radius + 1)}
        if held:
            wanted.update(also)
        wanted = sorted(wanted)
        seqs = sorted(set(seqs)) if held else []
        query = tantivy.Query.const_score_query(tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "gp", g)) for g in wanted] +
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "seq", s)) for s in seqs]), 0.0)
        if held:
            query = scored_by(query, [tantivy.Query.const_score_query(holding(schema, t), t.idf) for t in held])
        return self._run(query, filters, len(wanted) + len(seqs))

    def latest(self, session_id: str, kinds: list[str], names: list[str] | None = None, *,
               from_columns: bool = False) -> tuple[int, int] | None:
        """Where in the log (segment, offset) the newest event of these kinds
        in a session (optionally holding one of these tool names) is; recall asks this of
        every new session among its best hits. `from_columns`: read from the
        index's own columns, not the hit records (for a reader that found
        another event where the records pointed: a damaged or foreign hits.bin).

        The matches are few (a session's task snapshots): all of them are
        found unordered and the newest picked by seq. Ordering the search
        by the seq column instead cost ~250 µs a call at 1M events (Tantivy
        reads the column's block index in every segment for each sorted
        search), against ~40 µs."""
        index = self.open()
        if index is None:
            return None
        query = self._newest_query(index.schema, [session_id], kinds, names or [])
        searcher = index.searcher()
        hits = searcher.search(query, LATEST_SCAN, count=False).hits
        if len(hits) == LATEST_SCAN:                 # more than a scan's worth: let Tantivy order them
            hits = searcher.search(query, 1, count=False, order_by_field="seq").hits
        if not hits:
            return None
        addrs = [addr for _, addr in hits]
        seqs = searcher.fast_field_values("seq", addrs)
        newest = max(range(len(seqs)), key=seqs.__getitem__)
        records = None if from_columns else self._hit_records().read([seqs[newest]])
        if records is not None:
            return records[0][1], records[0][2]
        addrs = [addrs[newest]]
        return searcher.fast_field_values("seg", addrs)[0], searcher.fast_field_values("off", addrs)[0]

    def latest_each(self, sessions: dict[str, int], kinds: list[str], then_kinds: list[str],
                    then_names: list[str]) -> dict[str, tuple[int, int]] | None:
        """For each session (id -> its ordinal in the index, `gp` >> 32):
        where the newest event of `kinds` is, or else the newest of
        `then_kinds` holding one of `then_names` — latest() asked once or twice
        per session (~200 µs a call at 1M events), answered by one query
        for all the sessions and, for those with no event of `kinds`, one
        more. (The names are a second query's: beside the sessions'
        events, their union would be seeked to each of them.) None when
        the matches fill a scan (then ask latest() one session at a time)."""
        index = self.open()
        if index is None or not sessions:
            return {}
        searcher = index.searcher()

        def newest(wanted: dict[str, int], ks: list[str], names: list[str]) -> dict[int, FulltextHit] | None:
            query = self._newest_query(index.schema, list(wanted), ks, names)
            hits = searcher.search(query, LATEST_SCAN, count=False).hits
            if len(hits) == LATEST_SCAN:
                return None
            best: dict[int, FulltextHit] = {}
            # Grouped by the index's own gp column, not the hit records': a
            # damaged or foreign hits.bin must not hide a session's task
            # (the reader checks the event it finds where the records point).
            gps = searcher.fast_field_values("gp", [addr for _, addr in hits])
            for h, gp in zip(self._hits(searcher, [(0.0, addr) for _, addr in hits]), gps):
                held = best.get(gp >> 32)
                if held is None or h.seq > held.seq:
                    best[gp >> 32] = h
            return best

        found = newest(sessions, kinds, [])
        rest = {sid: o for sid, o in sessions.items() if found is not None and o not in found}
        then = newest(rest, then_kinds, then_names) if rest else {}
        if found is None or then is None:
            return None
        found.update(then)
        return {sid: (h.segment, h.offset) for sid, ordinal in sessions.items() if (h := found.get(ordinal))}

    def _newest_query(self, schema, sessions: list[str], kinds: list[str], names: list[str]):
        """The events of these sessions and kinds (holding one of `names`,
        when given), all scored 0: latest() and latest_each() pick the
        newest by seq themselves."""
        import tantivy
        parts = [any_of([tantivy.Query.term_query(schema, "session", s) for s in sessions]),
                 any_of([tantivy.Query.term_query(schema, "kind", k) for k in kinds])]
        named = self._names_query(schema, names)
        if named is not None:
            parts.append(named)
        return tantivy.Query.const_score_query(
            tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in parts]), 0.0)

    def kind_count(self, kind: str) -> int:
        index = self.open()
        return index.searcher().doc_freq("kind", kind) if index is not None else 0

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
        res = searcher.search(tantivy.Query.boolean_query(parts), limit, count=False, order_by_field="seq")
        return self._hits(searcher, [(0.0, addr) for _, addr in res.hits])

    def _run(self, query, filters: Filters | None, limit: int) -> list[FulltextHit]:
        import tantivy
        index = self.open()
        clauses = [(tantivy.Occur.Must, query)]
        for f in _filter_queries(index.schema, filters):      # filters narrow, they never score
            clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)))
        if len(clauses) > 1:
            query = tantivy.Query.boolean_query(clauses)
        searcher = index.searcher()
        return self._hits(searcher, searcher.search(query, limit, count=False).hits)

    def _hits(self, searcher, scored: list) -> list[FulltextHit]:
        """Hits for (score, address) pairs: their seqs read from the index,
        their other numbers from the hit records (stores/hit_records), or
        column by column when those cannot be trusted."""
        if not scored:
            return []
        addrs = [addr for _, addr in scored]
        seqs = searcher.fast_field_values("seq", addrs)
        rows = self._hit_records().read(seqs)
        if rows is None:                      # the same numbers, column by column
            rows = zip(seqs, *(searcher.fast_field_values(name, addrs) for name in HIT_COLUMNS[1:]))
        # a row is laid out as stores/hit_records Record: seq, seg, off, gp, ts, spk, chars, kno, traits
        return [FulltextHit(r[0], score, r[1], r[2], r[3], KIND_NAMES.get(r[7], ""), r[4], r[5] or 0, r[6] or 0,
                            r[8] or 0)
                for (score, _), r in zip(scored, rows)]

    def speaker_known(self, label: str) -> bool:
        """Whether `label` opens at least two events as their speaker."""
        index = self.open()
        return index is not None and index.searcher().doc_freq("speaker", label) >= 2

    def query_terms(self, words: list[str], exact: list[str]) -> list[QueryTerm]:
        """The query's searchable terms: each distinct word with the spellings
        the index holds that share its stem, each exact term as itself, and
        the IDF of each (all spellings together)."""
        index = self.open()
        if index is None:
            return []
        searcher = index.searcher()
        n_docs = max(searcher.num_docs, 1)
        out, seen = [], set()
        for token in dict.fromkeys(t for w in words for t in self._plain(w)):
            forms = [(f, df) for f in spellings(token) if (df := searcher.doc_freq("body", f))]
            key = frozenset(f for f, _ in forms)
            if forms and key not in seen:
                seen.add(key)
                together = min(sum(df for _, df in forms), n_docs)
                out.append(QueryTerm(key, bm25_idf(together, n_docs), False, tuple(forms), together))
        for term in dict.fromkeys(fold(e) for e in exact):
            df = searcher.doc_freq("exact", term)
            if df:
                out.append(QueryTerm(frozenset((term,)), bm25_idf(df, n_docs), True, (), df))
        return out

    def unknown_shares(self, words: list[str], exact: list[str], terms: list[QueryTerm]) -> tuple[float, float]:
        """The shares of a query's words, and of its exact terms, that no
        event holds (`terms` from query_terms): a question about something
        the store never saw."""
        known = {f for t in terms for f in t.forms}
        tokens = list(dict.fromkeys(t for w in words for t in self._plain(w)))
        missing = sum(1 for tok in tokens if known.isdisjoint(spellings(tok)))
        ids = list(dict.fromkeys(fold(e) for e in exact))
        return missing / len(tokens) if tokens else 0.0, sum(1 for e in ids if e not in known) / len(ids) if ids else 0.0

    def holding_all(self, tokens: list[str], exact: list[str], filters: Filters | None,
                    limit: int) -> list[FulltextHit]:
        """Events that hold every token (as _plain gives it) and every exact term,
        newest first: the candidates for a query that is an exact string."""
        import tantivy
        index = self.open()
        if index is None or not (tokens or exact):
            return []
        schema = index.schema
        parts = [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "body", t)) for t in tokens]
        parts += [(tantivy.Occur.Must, tantivy.Query.term_query(schema, "exact", fold(t))) for t in exact]
        parts += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0))
                  for f in _filter_queries(schema, filters)]
        searcher = index.searcher()
        res = searcher.search(tantivy.Query.boolean_query(parts), limit, count=False, order_by_field="seq")
        return self._hits(searcher, [(0.0, addr) for _, addr in res.hits])

    def doc_freq(self, term: str) -> int:
        index = self.open()
        return index.searcher().doc_freq("exact", fold(term)) if index is not None else 0

    def holds_names(self, names: list[str]) -> bool:
        """Whether any event's body holds one of these tool names whole."""
        index = self.open()
        if index is None:
            return False
        query = self._names_query(index.schema, names)
        return query is not None and bool(index.searcher().search(query, 1, count=False).hits)

    def word_doc_freq(self, word: str) -> int:
        """About how many events hold `word` in any spelling with its stem
        (an upper bound: an event with two spellings counts twice)."""
        index = self.open()
        if index is None:
            return 0
        tokens = self._plain(word)
        searcher = index.searcher()
        return min(sum(searcher.doc_freq("body", f) for f in spellings(tokens[0])),
                   searcher.num_docs) if tokens else 0

    def num_docs(self) -> int:
        index = self.open()
        return index.searcher().num_docs if index is not None else 0
