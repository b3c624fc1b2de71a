"""`trace recall` as a function: a query in, scored hits out.

One `Recaller` serves many queries (batch mode loads the indexes and the
embedder once). Per query:
  1. events that hold the query verbatim, when it is an exact string (an
     error text, an identifier): every one, newest first (exact.py);
  2. candidates: one lexical query (BM25 over body + ctx + exact terms,
     plus the IDF of each query term an event holds, so a rare term in a
     long tool output competes with short lines), in hybrid or vector mode
     the HNSW index's nearest, all inside the filters, and the same-session
     neighbours of the strongest; one more query measures how much of the
     query's IDF each candidate holds;
  3. every candidate is ranked by a logit from what the indexes know
     (reducers/fusion.py); the session's open task and the ledger's
     demotion adjust it; only the hits returned (and, when the query names
     a speaker, the first ten, to see which of them ask a question) are
     read from the log; reducers/calibration.py turns the ranked logits
     into scores: the chance that an answer lies among the first ten hits,
     shared by them, and p_hit;
  4. with --hops 2, a second retrieval driven by the identifiers the first
     found (hops.py); each hit says which hop found it;
  5. with --rerank, the first 50 ranked candidates are reordered by an
     optional stronger model (rerank.py; after A is estimated);
  6. diversity (MMR, off by default) over the ranked part, never over exact
     occurrences; hits come out in the order of the score they print.
Every query is appended to the retrieval log (`retrievals.jsonl`) that the
nightly sweep reads (retrieval_log.py); the open task weighed in 3 is
open_tasks.py's."""
from __future__ import annotations

import sqlite3
import time
from operator import attrgetter

from reducers.calibration import WINDOW, answerable, asks_question, query_features, window_scores
from reducers.fusion import (DELETED, EXACT_SCORE, SUPERSEDED, Candidate, by_logit, mmr, score_all, settle_all,
                             shown_scores, similarity_matrix, task_factor)
from reducers.query_dates import named_spans
from reducers.reflection import apply_tuning
from reducers.snippets import snippet, weigh
from reducers.truncate import with_match
from reducers.speakers import named_speakers
from reducers.terms import exact_query_terms, query_words, words
from reducers.turn_traits import question_form
from stores.errors import IntegrityError
from stores.index.fulltext import FulltextIndex
from stores.index.fulltext_documents import key63
from stores.index.fulltext_search import FulltextHit, QueryTerm
from stores.index.spellings import stems
from stores.ledger import ledger_marks
from stores.recall.open_tasks import OpenTasks
from stores.recall.query import MAX_QUERY_CHARS, MODES, Hit, RecallQuery, parse_time, printed
from stores.recall.retrieval_log import append_retrieval
from stores.log.segments import SegmentReader, tail_seq
from stores.sweep.tuning import load_boosts

__all__ = ["MAX_QUERY_CHARS", "MODES", "Hit", "Recaller", "RecallQuery", "parse_time"]

CANDIDATES = 100                # from the lexical query
VECTOR_CANDIDATES = 100         # from the HNSW index
NEIGHBOUR_ANCHORS = 30
COVER = 1.0                     # the lexical query adds COVER × the IDF of each rare query term an event holds
# The neighbours' words (the ctx field) in BM25: left out (the neighbour
# features do that job: LoCoMo dev R@10 0.764 without, 0.763 with, and the
# ctx postings are 4x the body's), unless the body matches fewer than
# FEW_MATCHES events.
CTX_BOOST = 0.0
CTX_FALLBACK = 0.5
FEW_MATCHES = 10
TASK_EXTRA = 5                  # the session's open task is weighed for the best k + this many...
TASK_CHARS = 4_000              # ...by the task's terms in the head of each (tokenizing 20k cost 2 ms a query)
SNIPPET_ARTIFACT_BYTES = 2_000_000   # of an artifact-backed hit's full text, for its snippet
VECTOR_CATCH_UP_LIMIT = 10_000
LEAST_WEIGHT = 0.5              # in a snippet, of a query word the index does not hold (IDFs run ~1-12)
_BM25 = attrgetter("bm25")


class Recaller:
    def __init__(self, store, note=lambda msg: None):
        self.store = store
        self.note = note
        self.fulltext = FulltextIndex(store.dir)
        self._vectors = None
        self._ledger: dict[int, str] | None = None
        self._tuning: dict[str, float] | None = None
        self._events: dict[int, dict] = {}
        self._log_reader = SegmentReader(store.segments_dir)    # hits read from the log, files kept open
        self._open_tasks = OpenTasks(self.fulltext, self._log_reader)
        self._held: dict[int, Candidate] = {}      # candidates whose `held` gather measured against the query
        self._texts: dict[int, str] = {}           # full texts the rerank read that a hit may show (this query)
        self.vector_lag = 0
        self.fulltext_lag = 0
        self._vectors_unusable = False
        self._reranker = None

    # -- keeping the indexes current -----------------------------------------------

    def prepare(self, mode: str, rebuild: bool = False) -> None:
        """Catch indexes up with the log when the store is free: full text
        always, vectors when the lag is a bounded tail. Otherwise answer
        from what is indexed and say how far behind it is."""
        from stores.errors import StoreLocked
        from stores.integrity.derived import fulltext_damage, vectors_damage
        self.store.require()
        log_seq = tail_seq(self.store.segments_dir)
        # Damaged files are never opened (an engine reading them can panic):
        # a writer rebuilds them from the log first.
        ft_damaged = bool(fulltext_damage(self.store.dir))
        vec_damaged = mode != "fulltext" and bool(vectors_damage(self.store.dir))
        readable = not ft_damaged and self.fulltext.usable() and self.fulltext.open() is not None
        ft_lag = log_seq - max(self.fulltext.watermark, 0) if readable else log_seq
        vec_lag = 0
        if mode != "fulltext" and not vec_damaged:
            vec_lag = log_seq - max(self.vectors.watermark, 0)
        need_vectors = mode != "fulltext" and (vec_damaged or 0 < vec_lag <= VECTOR_CATCH_UP_LIMIT)
        if (rebuild or ft_lag > 0 or need_vectors or vec_damaged
                or (mode != "fulltext" and self.vectors.watermark < 0)):
            try:
                self.fulltext.close()
                with self.store.writer(wait=0, embed=need_vectors, rebuild_fulltext=rebuild):
                    pass                      # opening a writer brings the indexes up to the log
                ft_damaged = vec_damaged = False
            except StoreLocked as exc:
                if not readable:              # never an empty answer that looks like "nothing found"
                    raise StoreLocked(f"the full-text index is being built or rebuilt and {exc}; "
                                      f"try again when that process is done") from None
                self.note("another writer holds the store: answering from the indexes as they are")
            except IntegrityError as exc:     # a log changed behind TRACE's back: still readable
                if not readable:
                    raise
                self.note(f"{exc}; answering from the indexes as they are")
            self.fulltext = FulltextIndex(self.store.dir)
            self._vectors = None
        self._vectors_unusable = vec_damaged
        self.fulltext_lag = log_seq - max(self.fulltext.watermark, 0)
        if mode != "fulltext":
            self.vector_lag = log_seq - max(self.vectors.watermark, 0)
            if self.vector_lag > 0:
                self.note(f"vector index is {self.vector_lag} events behind the log (run `trace index`); "
                          f"those events are found by full text only")

    @property
    def vectors(self):
        if self._vectors is None:
            from stores.index.vectors import VectorIndex
            self._vectors = VectorIndex(self.store.dir)
            if self._vectors_unusable:        # damaged and not yet rebuilt: answer by full text alone
                self._vectors.set_aside()
        return self._vectors

    # -- one query ---------------------------------------------------------------

    def recall(self, q: RecallQuery) -> list[Hit]:
        try:
            return self._recall(q)
        except (ValueError, OSError, RuntimeError, sqlite3.DatabaseError) as exc:
            self._rebuild_after(exc, q)
        except BaseException as exc:           # pyo3's PanicException: an engine that read damaged bytes
            if type(exc).__name__ != "PanicException":
                raise
            self._rebuild_after(exc, q)
        return self._recall(q)

    def _rebuild_after(self, exc: BaseException, q: RecallQuery) -> None:
        """A damaged index file surfaces as an engine error mid-search:
        rebuild from the log (it is derived), then the query is asked again."""
        what = "the search engine failed reading it" if type(exc).__name__ == "PanicException" else \
            f"{type(exc).__name__}: {str(exc)[:120]}"
        self.note(f"index error ({what}; damaged?): rebuilding it from the log")
        self.prepare(q.mode, rebuild=True)

    def _recall(self, q: RecallQuery) -> list[Hit]:
        from stores.recall.exact import occurrences
        t0 = time.perf_counter()
        self._events = {}
        self._held = {}
        self._texts = {}
        filters = q.filters()
        qwords, qexact = query_words(q.query), exact_query_terms(q.query)
        qterms = self.fulltext.query_terms(qwords, qexact)
        named = {key63(label) for label in named_speakers(words(q.query), self.fulltext.speaker_known)}
        qvec = None
        if q.mode != "fulltext" and self.vectors.count:
            qvec = self.vectors.embedder().embed_query(q.query)
        exact = occurrences(self, q, filters) if q.mode != "vector" else []
        cands = self.gather(qterms, qvec, filters, q.mode, hop=1, held_terms=qterms)
        self.measure(cands, qterms, qvec)
        ranked = self.rank(cands, q, named, qterms)
        if q.hops == 2 and ranked:
            from stores.recall.hops import second_hop
            ranked = second_hop(self, ranked, q, qvec, filters, named, qterms)
        ranked = [c for c in ranked if q.shown(c.seq, c.kind)]
        exact = [c for c in exact if q.shown(c.seq, c.kind)]
        snippet_terms = _snippet_terms(qterms, qwords + qexact)
        unknown = self.fulltext.unknown_shares(qwords, qexact, qterms)
        evidence = query_features([c.z for c in ranked], [c.f[1] for c in ranked], [c.f[3] > 0 for c in ranked],
                                  bool(named), *unknown, asks=self._asks(ranked[:WINDOW if named else 1])) \
            if ranked else None
        if q.rerank and ranked:
            # After the evidence: A (whether an answer is among the first
            # ten at all) stays the default ranking's estimate; the rerank
            # moves answers up within the first DEPTH.
            ranked = self._rerank(q, ranked, {c.seq for c in exact}, snippet_terms)
        hits = self._hits(exact, ranked, q, qvec, snippet_terms, evidence)
        if hits:
            from stores.recall.branches import mark_abandoned
            mark_abandoned(self.store, self.fulltext, hits)
        append_retrieval(self.store.dir, q, hits, time.perf_counter() - t0, self.note)
        return hits

    def gather(self, qterms: list[QueryTerm], qvec, filters, mode: str, hop: int,
               held_terms: list[QueryTerm] | None = None) -> dict[int, Candidate]:
        """Candidates from the lexical query, the vector index and the
        neighbours of the strongest, located by the index's columns; with
        `held_terms`, what each holds of them is measured on the way."""
        cands: dict[int, Candidate] = {}
        if mode != "vector" and qterms:
            found = self.fulltext.lexical(qterms, filters, CANDIDATES, cover=COVER, ctx_boost=CTX_BOOST)
            if len(found) < FEW_MATCHES and not CTX_BOOST:
                # Few events hold the query's words (or few inside the
                # filters): let the words of their neighbours (the ctx
                # field) find the tool result a question prompted, and the
                # reply next to it.
                found = self.fulltext.lexical(qterms, filters, CANDIDATES, cover=COVER, ctx_boost=CTX_FALLBACK)
            for h in found:
                cands[h.seq] = _candidate(h, hop)
        near: dict[int, float] = {}
        if qvec is not None and mode != "fulltext":
            near = dict(self.vectors.search(qvec, VECTOR_CANDIDATES))
        held = held_terms if mode != "vector" and held_terms else None
        # The vector hits join with BM25 0. When the lexical hits alone fill
        # the neighbours' anchors, those hits are located by the neighbours'
        # query below (one index query less); else first, as anchors.
        fold = bool(held) and sum(c.bm25 > 0 for c in cands.values()) >= NEIGHBOUR_ANCHORS
        if near and not fold:
            for h in self.fulltext.lookup([s for s in near if s not in cands], filters):
                cands[h.seq] = _candidate(h, hop)
        if mode != "vector" and cands:
            # Neighbours of the strongest candidates join with BM25 0, so
            # the turn next to a match can be lifted by it. With the query's
            # terms, the same query measures what every candidate holds of
            # them (measure() then skips those).
            anchors = sorted(cands.values(), key=_BM25, reverse=True)[:NEIGHBOUR_ANCHORS]   # stable: ties keep their order
            for h in self.fulltext.neighbours([c.gp for c in anchors], 2, filters, held=held,
                                              also=[c.gp for c in cands.values()] if held else (),
                                              seqs=[s for s in near if s not in cands] if fold else ()):
                c = cands.get(h.seq)
                if c is None:
                    c = cands[h.seq] = _candidate(h, hop)
                    c.bm25 = 0.0
                if held:
                    c.held = h.score
                    self._held[h.seq] = c
        for seq, cos in near.items():
            if seq in cands:
                cands[seq].cosine = cos
        return cands

    def measure(self, cands: dict[int, Candidate], qterms: list[QueryTerm], qvec) -> None:
        """What the indexes say of each candidate against the query: the IDF
        of the query terms it holds, and of those its window (it and its
        neighbours) holds, and its cosine to the query when it has a vector."""
        todo = [c for c in cands.values() if not c.measured]
        unheld = [c.seq for c in todo if self._held.get(c.seq) is not c]    # gather measured the others
        if qterms and unheld:
            held = self.fulltext.held_idf(unheld, qterms)
            for seq in unheld:
                cands[seq].held = held.get(seq, 0.0)
        if qterms and todo:
            window = self.fulltext.window_held_idf([c.seq for c in todo], qterms)
            for c in todo:
                c.window = window.get(c.seq, 0.0)
        if qvec is not None:
            from stores.index.vectors import EMBED_KINDS, MIN_CHARS
            missing = [c.seq for c in todo if c.cosine is None and c.kind in EMBED_KINDS and c.chars >= MIN_CHARS]
            for seq, cos in self.vectors.cosines(missing, qvec).items():
                cands[seq].cosine = cos
        for c in todo:
            c.measured = True

    def rank(self, cands: dict[int, Candidate], q: RecallQuery, named: set[int],
             qterms: list[QueryTerm]) -> list[Candidate]:
        """Every candidate scored from what the indexes know; the best few
        weighed against their session's open task; best first."""
        if not cands:
            return []
        marks = self.ledger
        for c in cands.values():
            # Ledger demotion: a fact the ledger supersedes or deletes keeps
            # its place in the log but loses part of its probability.
            mark = marks.get(c.seq)
            c.sup = SUPERSEDED if mark == "UPDATE" else DELETED if mark == "DELETE" else 0.0
        ranked = score_all(list(cands.values()), named, sum(t.idf for t in qterms), spans=named_spans(q.query),
                           form=question_form(q.query))
        tasks, boosts = self._open_tasks.known(), self.tuning
        if tasks or boosts:
            # The task lifts a logit by at most log 1.25, the reflection's
            # boosts by at most log MAX_FACTOR: they reorder near ties among
            # the best, which are read to be shown anyway.
            top = ranked[:q.k + TASK_EXTRA]
            self._read(top)
            if tasks:
                self._open_tasks.find(top, self._events)
            for c in top if tasks else ():
                e = self._events.get(c.seq)
                task_terms = self._open_tasks.terms(e["session_id"]) if e is not None else None
                if task_terms:
                    c.task = task_factor(set(words((e.get("text") or "")[:TASK_CHARS])), task_terms)
            apply_tuning(top, self._events, boosts)
            settle_all(top)
            by_logit(ranked)
        return ranked

    def _hits(self, exact: list[Candidate], ranked: list[Candidate], q: RecallQuery, qvec,
              snippet_terms: dict[str, float], evidence: dict | None) -> list[Hit]:
        """Exact occurrences first (newest first, all at one score), then the
        ranked part with diversity, each hit with its calibrated score
        (reducers/calibration.py) and the snippet where the most of
        `snippet_terms` (the query's words, weighed) meets."""
        taken = {c.seq for c in exact}
        rest = [c for c in ranked if c.seq not in taken]
        room = max(q.k - len(exact), 0)
        if q.mmr < 1.0 and room:
            rest = self._diverse(rest[:max(room * 3, 60)], room, q.mmr, qvec) + \
                [c for c in rest[max(room * 3, 60):][:WINDOW]]
        a = answerable(evidence) if evidence is not None else 0.0
        scores, p_hit = window_scores([c.z for c in rest], a, room)
        rest = rest[:room]
        for c, s, p in zip(rest, scores, p_hit):
            c.score, c.p_hit = s, p
        if exact:
            top = max([EXACT_SCORE] + [c.score for c in rest])
            for c in exact:
                c.score = top
        hits = []
        shown = [c for c in exact[:q.k] + rest if q.min_score is None or printed(c.score) >= q.min_score]
        self._read(shown)
        for c in shown:
            e = self._events.get(c.seq)
            if e is None:
                continue
            full = self._texts.get(c.seq)
            if full is None:
                full = self._full_text(e)
            shown_snippet = snippet(full, snippet_terms)
            text = e.get("text", "")
            if e.get("artifact"):
                # the log keeps the head/tail preview; the hit shows what matched
                text = with_match(text, shown_snippet)
            scores = shown_scores(c)
            if c.exact:
                scores["exact"] = True
            hits.append(Hit(rank=len(hits) + 1, event_id=e["id"], seq=e["seq"], session_id=e["session_id"],
                            ts=e.get("ts") or e.get("ingested_at"), kind=e["kind"], score=c.score,
                            scores=scores, snippet=shown_snippet, text=text, hop=c.hop,
                            query_id=q.query_id, event=e))
        return hits

    def _rerank(self, q: RecallQuery, ranked: list[Candidate], taken: set[int],
                terms: dict[str, float]) -> list[Candidate]:
        """The first DEPTH candidates (exact occurrences aside: they lead
        anyway) reordered by the optional model (stores/recall/rerank.py),
        each read as the passage where the most of the query's `terms` meets.
        The full texts of the first k after it are kept for their hits'
        snippets (an artifact is read once a query; k of them at most held)."""
        from stores.recall.rerank import DEPTH, Reranker, passage
        if self._reranker is None:
            self._reranker = Reranker()
        ranked = [c for c in ranked if c.seq not in taken]
        head = ranked[:DEPTH]
        self._read(head)
        full = {}
        for c in head:
            e = self._events.get(c.seq)
            full[c.seq] = self._full_text(e) if e is not None else ""
        ranked = self._reranker.rerank(q.query, ranked, [passage(full[c.seq], terms) for c in head])
        self._texts = {c.seq: full[c.seq] for c in ranked[:q.k] if c.seq in full}
        return ranked

    def _diverse(self, ranked: list[Candidate], k: int, lam: float, qvec) -> list[Candidate]:
        if lam >= 1.0 or len(ranked) <= 1:
            return ranked[:k]
        pool = ranked[:max(k * 3, 60)]
        self._read(pool)
        from stores.index.vectors import EMBED_KINDS
        vecs = self.vectors.vectors_for([c.seq for c in pool if c.kind in EMBED_KINDS]) if qvec is not None else {}
        sim = similarity_matrix([set() if c.seq in vecs else self._word_set(c.seq) for c in pool],
                                [vecs.get(c.seq) for c in pool])
        at = {c.seq: i for i, c in enumerate(pool)}
        return mmr(pool, k, lam, lambda a, b: sim[at[a.seq]][at[b.seq]])

    # -- helpers ---------------------------------------------------------------

    def _asks(self, cands: list[Candidate]) -> list[bool]:
        """Whether each of these (the best few, read to be shown anyway)
        asks a question (reducers/calibration.py asks_question)."""
        self._read(cands)
        out = []
        for c in cands:
            e = self._events.get(c.seq)
            out.append(e is not None and asks_question(e.get("text") or "", c.kind))
        return out

    def _full_text(self, event: dict) -> str:
        """An event's text; an artifact-backed event's content (its log text
        is a head/tail preview), so a snippet or the reranker sees the part
        that matched."""
        text = event.get("text") or ""
        if not event.get("artifact"):
            return text
        try:
            data = self.store.artifacts.read(event["artifact"]["id"])
        except Exception:                    # a missing or damaged artifact: the preview will do
            return text
        return data[:SNIPPET_ARTIFACT_BYTES].decode("utf-8", "replace")

    def _read(self, cands: list[Candidate]) -> None:
        for c in cands:
            if c.seq in self._events:
                continue
            e = self._log_reader.event_at(c.segment, c.offset)
            if e is not None and e.get("seq") == c.seq:
                self._events[c.seq] = e

    def _word_set(self, seq: int) -> set[str]:
        return set(words(self._events.get(seq, {}).get("text", "")[:4000]))

    @property
    def ledger(self) -> dict[int, str]:
        if self._ledger is None:
            self._ledger = ledger_marks(self.store.dir)
        return self._ledger

    @property
    def tuning(self) -> dict[str, float]:
        if self._tuning is None:
            self._tuning = load_boosts(self.store.dir)
        return self._tuning

def _candidate(h: FulltextHit, hop: int) -> Candidate:
    # positional, in Candidate's order (seq, gp, ts_ms, kind, bm25, speaker_key, chars, hop, segment, offset, traits)
    return Candidate(h.seq, h.gp, h.ts_ms, h.kind, h.score, h.speaker_key, h.chars, hop, h.segment, h.offset, h.traits)


def _snippet_terms(qterms: list[QueryTerm], typed: list[str]) -> dict[str, float]:
    """What a snippet (and a reranked passage) looks for: each spelling of
    a query term, and each word's stem as a prefix, weighed by the term's
    IDF; the words as typed that the index does not hold count least."""
    spelled = [(f, t.idf) for t in sorted(qterms, key=lambda t: -t.idf)
               for f in [*sorted(t.forms), *([] if t.exact else stems(t.forms))]]
    unheld = typed + stems(typed)
    return weigh([f for f, _ in spelled] + unheld, [w for _, w in spelled] + [LEAST_WEIGHT] * len(unheld))

