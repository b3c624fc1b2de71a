"""The full-text index (Tantivy, `fulltext/`): derived from the log,
rebuilt from it whenever it is missing, corrupt or of an older schema.

Fields: `body` (the event's text, English-stemmed), `ctx` (the two events
before and the two after it in its session, stemmed, weighted lower: a tool
result is found by the question that prompted it, a question by its answer;
+0.03 recall@10 on LoCoMo dev over query-time smoothing alone), `exact` (hashes,
paths, addresses, identifiers kept whole, plus their parts; see
reducers/terms.py), and `session`, `kind`, `ts`, `seq` so filters run
inside the index. Stored: where the event lives in the log (segment,
offset) and its position in its session, so a hit is one seek away from
the verbatim event.

Bookkeeping lives in `fulltext/positions.db` (SQLite): the watermark (last
seq indexed) and, per session, the next position and the recent texts that
feed `ctx`. It is committed only after Tantivy commits, in one transaction,
so the watermark never runs ahead of the index; documents past the
watermark (a crash between the two commits) are deleted before catch-up
re-adds them, so nothing is indexed twice."""
from __future__ import annotations

import shutil
import sqlite3
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path

import orjson

from reducers.terms import exact_terms

SCHEMA_VERSION = 6
INDEX_MAX_CHARS = 2_000_000          # how much of a huge artifact is searchable
CTX_EVENTS = 2
CTX_CHARS = 600
REINDEX_MAX_CHARS = 16_384           # bigger events are indexed at once, with the context before them only
OPEN_SESSIONS = 256                  # sessions whose recent events are held in memory during an ingest
_HEAP = 64 * 1024 * 1024       # the writer flushes a segment when it fills: memory stays bounded
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


def ts_millis(ts: str | None) -> int:
    if not ts:
        return 0
    from datetime import datetime
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


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


def _body(event: dict, text: str) -> str:
    tool = event.get("tool") or {}
    return f"{tool['name']} {text}" if tool.get("name") else text


def _persisted(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "body"}


def _document(entry: dict, body: str, after: list[str]):
    import tantivy
    doc = tantivy.Document()
    doc.add_unsigned("seq", entry["seq"])
    doc.add_unsigned("seg", entry["seg"])
    doc.add_unsigned("off", entry["off"])
    doc.add_unsigned("pos", entry["pos"])
    doc.add_text("session", entry["session"])
    doc.add_text("kind", entry["kind"])
    doc.add_integer("ts", entry["ts"])
    doc.add_text("body", body)
    ctx = entry["before"] + after
    if ctx:
        doc.add_text("ctx", " ".join(ctx))
    doc.add_text("exact", " ".join(exact_terms(body)))
    return doc


def _schema():
    import tantivy
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("seq", stored=True, indexed=True, fast=True)
    sb.add_unsigned_field("seg", stored=True)
    sb.add_unsigned_field("off", stored=True)
    sb.add_unsigned_field("pos", stored=True, indexed=True)
    sb.add_text_field("session", stored=True, tokenizer_name="raw")
    sb.add_text_field("kind", stored=True, tokenizer_name="raw")
    sb.add_integer_field("ts", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", tokenizer_name="en_stem")
    sb.add_text_field("ctx", tokenizer_name="en_stem", index_option="freq")
    sb.add_text_field("exact", tokenizer_name="exact", index_option="basic")
    return sb.build()


def _exact_analyzer():
    import tantivy
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).filter(tantivy.Filter.lowercase()).build()


class FulltextIndex:
    def __init__(self, store: Path):
        self.dir = store / "fulltext"
        self._index = None
        self._writer = None
        self._db: sqlite3.Connection | None = None
        self._stemmer = None
        # session -> (next pos, last CTX_EVENTS entries), an LRU of OPEN_SESSIONS
        self._ctx: OrderedDict[str, tuple[int, deque]] = OrderedDict()

    # -- bookkeeping ---------------------------------------------------------

    def _positions(self) -> sqlite3.Connection | None:
        if self._db is None:
            path = self.dir / "positions.db"
            if not path.exists() and not self.dir.is_dir():
                return None
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.executescript("""
                CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, next_pos INTEGER, recent TEXT)
                    WITHOUT ROWID;""")
        return self._db

    def _meta(self, name: str) -> str | None:
        db = self._positions()
        if db is None:
            return None
        try:
            row = db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        except sqlite3.DatabaseError:
            return None
        return row[0] if row else None

    @property
    def watermark(self) -> int:
        """Last seq indexed, or -1 when the index is missing, foreign or of
        an older schema (it must be rebuilt)."""
        if self._meta("schema") != str(SCHEMA_VERSION):
            return -1
        return int(self._meta("seq") or 0)

    def usable(self) -> bool:
        return self.watermark >= 0

    def open(self):
        """The Tantivy index for reading (None when missing or unusable)."""
        if self._index is None:
            if not self.usable():
                return None
            import tantivy
            try:
                index = tantivy.Index.open(str(self.dir))
            except Exception:
                return None
            index.register_tokenizer("exact", _exact_analyzer())
            self._index = index
        return self._index

    # -- writing (the caller holds the store's writer lock) -----------------------

    def reset(self) -> None:
        """Start an empty index (rebuild from the log follows)."""
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        import tantivy
        index = tantivy.Index(_schema(), path=str(self.dir))
        index.register_tokenizer("exact", _exact_analyzer())
        self._index = index
        db = self._positions()
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?), ('seq', '0')", (str(SCHEMA_VERSION),))

    def drop_after(self, seq: int) -> None:
        """Delete documents past the watermark (left by a crash between the
        Tantivy commit and the bookkeeping commit)."""
        import tantivy
        writer = self._writer_for()
        index = self._index
        writer.delete_documents_by_query(tantivy.Query.range_query(
            index.schema, "seq", tantivy.FieldType.Unsigned, seq + 1, None))

    def _writer_for(self):
        if self._writer is None:
            if self.open() is None:
                self.reset()
            self._writer = self._index.writer(heap_size=_HEAP, num_threads=1)
        return self._writer

    def _session_state(self, sid: str) -> tuple[int, deque]:
        state = self._ctx.get(sid)
        if state is None:
            row = self._positions().execute(
                "SELECT next_pos, recent FROM sessions WHERE session_id=?", (sid,)).fetchone()
            recent = orjson.loads(row[1]) if row else []
            state = self._ctx[sid] = (row[0] if row else 0, deque(recent, maxlen=CTX_EVENTS))
            if len(self._ctx) > OPEN_SESSIONS:
                self._close_session(next(iter(self._ctx)))
        else:
            self._ctx.move_to_end(sid)
        return state

    def add(self, events: list[dict], locations: list[tuple[int, int]], full_texts: dict[int, str]) -> None:
        """Index sealed events; `full_texts` maps seq -> artifact content for
        artifact-backed events (searchable, though the event holds a preview).

        An event's document waits until the two events after it in its
        session have arrived (its `ctx` is then complete) or until commit.
        Re-indexing only happens for the few events still waiting at a
        commit: Tantivy keeps deleted documents in its BM25 statistics until
        segments merge, so churn would skew scores."""
        writer = self._writer_for()
        for event, (seg, off) in zip(events, locations):
            sid = event["session_id"]
            pos, recent = self._session_state(sid)
            text = (full_texts.get(event["seq"]) or event.get("text") or "")[:INDEX_MAX_CHARS]
            body = _body(event, text)
            entry = {"seq": event["seq"], "seg": seg, "off": off, "pos": pos, "session": sid,
                     "kind": event["kind"], "ts": ts_millis(event.get("ts") or event.get("ingested_at")),
                     "head": body[:CTX_CHARS], "before": [e["head"] for e in recent], "indexed": False,
                     "body": body}
            if len(recent) == CTX_EVENTS:                 # the oldest now has both successors
                self._index_entry(writer, recent[0], [recent[1]["head"], entry["head"]])
            if len(body) > REINDEX_MAX_CHARS:             # too big to hold: index now, never again
                self._index_entry(writer, entry, [])
                entry["final"] = True
                entry.pop("body", None)
            recent.append(entry)
            self._ctx[sid] = (pos + 1, recent)

    def _index_entry(self, writer, entry: dict, after: list[str]) -> None:
        if entry.get("final"):
            return
        if entry["indexed"]:                              # indexed early: replace it
            # (delete_documents_by_term cannot match a u64 field from Python; a query can)
            import tantivy
            writer.delete_documents_by_query(tantivy.Query.term_query(self._index.schema, "seq", entry["seq"]))
        body = entry.get("body")
        if body is None:
            body = self._reload_body(entry)
        writer.add_document(_document(entry, body, after))
        entry["indexed"] = True
        entry["final"] = len(after) >= CTX_EVENTS
        if entry["final"]:
            entry.pop("body", None)

    def _reload_body(self, entry: dict) -> str:
        """An entry kept without its text (its session left memory) is
        re-read from the log when it must be indexed again."""
        from stores.artifacts import ArtifactStore
        from stores.segments import read_event_at
        store = self.dir.parent
        event = read_event_at(store / "segments", entry["seg"], entry["off"]) or {}
        text = event.get("text") or ""
        art = event.get("artifact")
        if art:
            try:
                text = ArtifactStore(store).read(art["id"])[:INDEX_MAX_CHARS].decode("utf-8", "ignore")
            except Exception:
                pass
        return _body(event, text[:INDEX_MAX_CHARS]) if event else entry["head"]

    def _close_session(self, sid: str) -> None:
        """Memory stays flat however many sessions an ingest touches: the
        least recently used session's waiting events are indexed with the
        context they have, and its state goes to positions.db inside the
        transaction that commit() closes (a crash rolls it back with the
        rest)."""
        pos, recent = self._ctx.pop(sid)
        writer = self._writer_for()
        items = list(recent)
        for i, entry in enumerate(items):
            if not entry["indexed"] and not entry.get("final"):
                self._index_entry(writer, entry, [e["head"] for e in items[i + 1:]])
            entry.pop("body", None)
        db = self._positions()
        if not db.in_transaction:
            db.execute("BEGIN")
        db.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?)", (sid, pos, orjson.dumps(items).decode()))

    def _flush_waiting(self) -> None:
        """At commit: index the events still waiting for successors, with
        the context they have so far."""
        writer = None
        for _, recent in self._ctx.values():
            items = list(recent)
            for i, entry in enumerate(items):
                if not entry["indexed"] and not entry.get("final"):
                    writer = writer or self._writer_for()
                    self._index_entry(writer, entry, [e["head"] for e in items[i + 1:]])

    def commit(self, seq: int) -> None:
        """Make everything added searchable, then move the watermark."""
        self._flush_waiting()
        if self._writer is not None:
            self._writer.commit()
            self._writer.wait_merging_threads()
            self._writer = None
            self._index.reload()
        db = self._positions()
        if db is None:
            return
        if not db.in_transaction:
            db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?)",
                       ((sid, pos, orjson.dumps([_persisted(e) for e in recent]).decode())
                        for sid, (pos, recent) in self._ctx.items()))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('seq', ?)", (str(seq),))
        db.execute("COMMIT")
        self._ctx.clear()

    def close(self) -> None:
        self._writer = None
        self._index = None
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- reading -------------------------------------------------------------

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
        for token in dict.fromkeys(t for w in words for t in self._stem(w)):
            body = tantivy.Query.term_query(schema, "body", token)
            ctx = tantivy.Query.boost_query(tantivy.Query.term_query(schema, "ctx", token), ctx_boost)
            if max(searcher.doc_freq("body", token), searcher.doc_freq("ctx", token)) > common_df:
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

    def _stem(self, word: str) -> list[str]:
        """A word as the index's en_stem tokenizer splits and stems it."""
        if self._stemmer is None:
            import tantivy
            self._stemmer = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                             .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
                             .filter(tantivy.Filter.stemmer("english")).build())
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
        if words:
            parts.append((tantivy.Occur.Must, index.parse_query(" ".join(words), ["body"])))
        searcher = index.searcher()
        res = searcher.search(tantivy.Query.boolean_query(parts), 1, order_by_field="seq")
        if not res.hits:
            return None
        return self._hit(searcher, 0.0, res.hits[0][1])

    def _run(self, query, filters: Filters | None, limit: int) -> list[FulltextHit]:
        import tantivy
        index = self._index
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
