"""`trace recall` as a function: a query in, scored hits out.

One `Recaller` serves many queries (batch mode loads the indexes and the
embedder once). Per query:
  1. events that hold the query verbatim, when it is an exact string (an
     error text, an identifier): every one, newest first (exact.py);
  2. candidates from BM25 (body + ctx + exact terms) and, in hybrid or
     vector mode, from the HNSW index, all inside the filters, and the
     same-session neighbours of the strongest;
  3. stage 1 scores them all on what the index knows (reducers/fusion.py);
     the best are read verbatim from the log and stage 2 adds what their
     text tells (coverage of the query's rare terms, substance), the
     session's open task and the ledger's demotion; score = the calibrated
     probability that the hit answers the query;
  4. with --hops 2, a second retrieval driven by the identifiers the first
     found (hops.py); each hit says which hop found it;
  5. diversity (MMR) over the ranked part, never over exact occurrences;
     hits come out in the order of the score they print.
Every query is appended to the retrieval log (`retrievals.jsonl`) that the
nightly sweep reads."""
from __future__ import annotations

import os
import time
from datetime import datetime, timezone

import orjson

from reducers.fusion import (DELETED, EXACT_SCORE, SUPERSEDED, Candidate, coverage, mmr, set_task,
                             similarity_matrix, stage1, stage2, task_factor)
from reducers.snippets import snippet
from reducers.speakers import named_speakers
from reducers.tasks import TODO_TOOLS, open_loops_text
from reducers.terms import exact_query_terms, query_words, words
from stores.fulltext import FulltextIndex
from stores.fulltext_search import FulltextHit, QueryTerm
from stores.ledger import ledger_marks
from stores.recall.query import MAX_QUERY_CHARS, MODES, Hit, RecallQuery, parse_time
from stores.segments import read_event_at
from stores.vectors import EMBED_KINDS

__all__ = ["MAX_QUERY_CHARS", "MODES", "Hit", "Recaller", "RecallQuery", "parse_time"]

CANDIDATES = 100
COVERING_CANDIDATES = 50
NEIGHBOUR_ANCHORS = 30
RERANK_POOL = 60
COVERAGE_CHARS = 100_000        # coverage reads this much of an event's text
INDEX_COVERAGE_CHARS = 8_000    # above this, coverage is asked of the index
VECTOR_CATCH_UP_LIMIT = 10_000


class Recaller:
    def __init__(self, store, note=lambda msg: None):
        self.store = store
        self.note = note
        self.fulltext = FulltextIndex(store.dir)
        self._vectors = None
        self._ledger: dict[int, str] | None = None
        self._tasks: dict[str, set[str]] = {}
        self._events: dict[int, dict] = {}
        self.vector_lag = 0
        self.fulltext_lag = 0

    # -- keeping the indexes current -----------------------------------------------

    def prepare(self, mode: str, rebuild: bool = False) -> None:
        """Catch indexes up with the log when the store is free: full text
        always, vectors when the lag is a bounded tail. Otherwise answer
        from what is indexed and say how far behind it is."""
        from stores.errors import StoreLocked
        self.store.require()
        log_seq = _log_tail_seq(self.store)
        readable = self.fulltext.usable() and self.fulltext.open() is not None
        ft_lag = log_seq - max(self.fulltext.watermark, 0) if readable else log_seq
        vec_lag = 0
        if mode != "fulltext":
            vec_lag = log_seq - max(self.vectors.watermark, 0)
        need_vectors = mode != "fulltext" and 0 < vec_lag <= VECTOR_CATCH_UP_LIMIT
        if rebuild or ft_lag > 0 or need_vectors or (mode != "fulltext" and self.vectors.watermark < 0):
            try:
                self.fulltext.close()
                with self.store.writer(wait=0, embed=need_vectors, rebuild_fulltext=rebuild):
                    pass                      # opening a writer brings the indexes up to the log
            except StoreLocked:
                self.note("another writer holds the store: answering from the indexes as they are")
            self.fulltext = FulltextIndex(self.store.dir)
            self._vectors = None
        self.fulltext_lag = log_seq - max(self.fulltext.watermark, 0)
        if mode != "fulltext":
            self.vector_lag = log_seq - max(self.vectors.watermark, 0)
            if self.vector_lag > 0:
                self.note(f"vector index is {self.vector_lag} events behind the log (run `trace index`); "
                          f"those events are found by full text only")

    @property
    def vectors(self):
        if self._vectors is None:
            from stores.vectors import VectorIndex
            self._vectors = VectorIndex(self.store.dir)
        return self._vectors

    # -- one query ---------------------------------------------------------------

    def recall(self, q: RecallQuery) -> list[Hit]:
        try:
            return self._recall(q)
        except (ValueError, OSError, RuntimeError) as exc:
            # A damaged index file surfaces as an engine error mid-search:
            # rebuild from the log (it is derived) and ask once more.
            self.note(f"index error ({type(exc).__name__}: {str(exc)[:120]}): rebuilding from the log")
            self.prepare(q.mode, rebuild=True)
            return self._recall(q)

    def _recall(self, q: RecallQuery) -> list[Hit]:
        from stores.recall.exact import occurrences
        t0 = time.perf_counter()
        self._events = {}
        filters = q.filters()
        qwords, qexact = query_words(q.query), exact_query_terms(q.query)
        named = named_speakers(words(q.query), self.fulltext.speaker_known)
        qterms = self.fulltext.query_terms(qwords, qexact)
        qvec = None
        if q.mode != "fulltext" and self.vectors.count:
            qvec = self.vectors.embedder().embed([q.query])[0]
        exact = occurrences(self, q, filters) if q.mode != "vector" else []
        cands = self.gather(qwords, qexact, qvec, filters, q.mode, hop=1, qterms=qterms)
        ranked = self.rank(cands, q, named, qterms)
        if q.hops == 2 and ranked:
            from stores.recall.hops import second_hop
            ranked = second_hop(self, ranked, q, qvec, filters, named, qterms)
        telling = [f for t in sorted(qterms, key=lambda t: -t.idf) for f in sorted(t.forms)]
        hits = self._hits(exact, ranked, q, qvec, telling + qwords + qexact)
        self._log(q, hits, time.perf_counter() - t0)
        return hits

    def gather(self, qwords, qexact, qvec, filters, mode, hop, qterms=None) -> dict[int, Candidate]:
        cands: dict[int, Candidate] = {}
        if mode != "vector":
            for h in self.fulltext.search(qwords, qexact, filters, limit=CANDIDATES):
                cands[h.seq] = _candidate(h, hop)
            if qterms:
                # The events holding most of the query's rare terms, however
                # long: a needle in a long tool output is one of them.
                total = sum(t.idf for t in qterms) or 1.0
                for h in self.fulltext.covering(qterms, filters, COVERING_CANDIDATES):
                    c = cands.get(h.seq)
                    if c is None:
                        h.score, held = 0.0, h.score
                        c = cands[h.seq] = _candidate(h, hop)
                        c.coverage = held / total
                    else:
                        c.coverage = h.score / total
        if qvec is not None and mode != "fulltext":
            near = self.vectors.search(qvec, CANDIDATES)
            if near:
                for h in self.fulltext.lookup([s for s, _ in near], filters):
                    cands.setdefault(h.seq, _candidate(h, hop))
        if mode != "vector" and cands:
            # Neighbours of the strongest candidates join with BM25 0, so
            # the turn next to a match can be lifted by it.
            anchors = sorted(cands.values(), key=lambda c: -c.bm25)[:NEIGHBOUR_ANCHORS]
            for h in self.fulltext.neighbours([(c.session_id, c.pos) for c in anchors], 2, filters):
                cands.setdefault(h.seq, _candidate(h, hop))
        if qvec is not None and cands:
            vecs = self.vectors.vectors_for([s for s, c in cands.items() if c.kind in EMBED_KINDS])
            for seq, v in vecs.items():
                cands[seq].cosine = float(v @ qvec)
        return cands

    def rank(self, cands: dict[int, Candidate], q: RecallQuery, named: set[str],
             qterms: list[QueryTerm]) -> list[Candidate]:
        """Stage 1 over every candidate, stage 2 over the best; best first."""
        if not cands:
            return []
        marks = self.ledger
        for c in cands.values():
            # Ledger demotion: a fact the ledger supersedes or deletes keeps
            # its place in the log but loses part of its probability.
            mark = marks.get(c.seq)
            c.sup = SUPERSEDED if mark == "UPDATE" else DELETED if mark == "DELETE" else 0.0
        ranked = stage1(list(cands.values()), named)
        pool = ranked[:max(RERANK_POOL, q.k * 3)]
        self._read(pool)
        held = self._artifact_terms(pool, qterms)
        for c in pool:
            e = self._events.get(c.seq)
            if e is None:
                continue
            text = e.get("text", "")
            if c.seq in held:
                cov = sum(t.idf for i, t in enumerate(qterms) if i in held[c.seq]) / (
                    sum(t.idf for t in qterms) or 1.0)
            else:
                cov = text_coverage(text, qterms)
            stage2(c, cov, len(text))
            task_terms = self._task_terms(c.session_id)
            if task_terms:
                set_task(c, task_factor(set(words(text)), task_terms))
        return sorted((c for c in pool if c.seq in self._events), key=lambda c: (-c.z, c.seq))

    def _artifact_terms(self, pool: list[Candidate], qterms: list[QueryTerm]) -> dict[int, set[int]]:
        """For events whose full text lives in an artifact (the log holds a
        preview), and for long texts (one index query per term is cheaper
        than splitting them into words), the index says which query terms
        the whole text holds."""
        seqs = [c.seq for c in pool if (e := self._events.get(c.seq)) is not None
                and (e.get("artifact") or len(e.get("text") or "") > INDEX_COVERAGE_CHARS)]
        return self.fulltext.terms_held(seqs, qterms) if seqs and qterms else {}

    def _hits(self, exact: list[Candidate], ranked: list[Candidate], q: RecallQuery, qvec,
              terms: list[str]) -> list[Hit]:
        """Exact occurrences first (newest first, all at one score), then the
        ranked part with diversity, each hit with the score that placed it."""
        taken = {c.seq for c in exact}
        rest = [c for c in ranked if c.seq not in taken]
        room = max(q.k - len(exact), 0)
        rest = self._diverse(rest, room, q.mmr, qvec) if room else []
        if exact:
            top = max([EXACT_SCORE] + [c.score for c in rest])
            for c in exact:
                c.score = top
        hits = []
        for c in exact[:q.k] + rest:
            if q.min_score is not None and c.score < q.min_score:
                continue
            e = self._events.get(c.seq)
            if e is None:
                continue
            text = e.get("text", "")
            shown = self._artifact_text(e) if e.get("artifact") else text
            scores = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in c.scores.items()}
            scores.update({name: round(value, 4) for name, value in c.x.items() if name not in scores})
            scores["logit"] = round(c.z, 4)
            if c.exact:
                scores["exact"] = True
            hits.append(Hit(rank=len(hits) + 1, event_id=e["id"], seq=e["seq"], session_id=e["session_id"],
                            ts=e.get("ts") or e.get("ingested_at"), kind=e["kind"], score=c.score,
                            scores=scores, snippet=snippet(shown, terms), text=text, hop=c.hop,
                            query_id=q.query_id, event=e))
        return hits

    def _diverse(self, ranked: list[Candidate], k: int, lam: float, qvec) -> list[Candidate]:
        if lam >= 1.0 or len(ranked) <= 1:
            return ranked[:k]
        pool = ranked[:max(k * 3, RERANK_POOL)]
        vecs = self.vectors.vectors_for([c.seq for c in pool if c.kind in EMBED_KINDS]) if qvec is not None else {}
        sim = similarity_matrix([set() if c.seq in vecs else self._word_set(c.seq) for c in pool],
                                [vecs.get(c.seq) for c in pool])
        at = {c.seq: i for i, c in enumerate(pool)}
        return mmr(pool, k, lam, lambda a, b: sim[at[a.seq]][at[b.seq]])

    # -- helpers ---------------------------------------------------------------

    def _artifact_text(self, event: dict) -> str:
        """An artifact-backed event's full text (its log text is a head/tail
        preview), so the snippet shows the part that matched."""
        try:
            data = self.store.artifacts.read(event["artifact"]["id"])
        except Exception:                    # a missing or damaged artifact: the preview will do
            return event.get("text", "")
        return data[:COVERAGE_CHARS * 20].decode("utf-8", "replace")

    def _read(self, cands: list[Candidate]) -> None:
        for c in cands:
            if c.seq in self._events:
                continue
            e = read_event_at(self.store.segments_dir, c.segment, c.offset)
            if e is not None and e.get("seq") == c.seq:
                self._events[c.seq] = e

    def _word_set(self, seq: int) -> set[str]:
        return set(words(self._events.get(seq, {}).get("text", "")[:4000]))

    @property
    def ledger(self) -> dict[int, str]:
        if self._ledger is None:
            self._ledger = ledger_marks(self.store.dir)
        return self._ledger

    def _task_terms(self, session_id: str) -> set[str]:
        if session_id not in self._tasks:
            terms: set[str] = set()
            hit = self.fulltext.latest(session_id, ["task_state"])
            if hit is None:
                hit = self.fulltext.latest(session_id, ["tool_call"], [t.lower() for t in TODO_TOOLS])
            if hit is not None:
                e = read_event_at(self.store.segments_dir, hit.segment, hit.offset)
                if e is not None:
                    terms = set(query_words(open_loops_text(e)))
            self._tasks[session_id] = terms
        return self._tasks[session_id]

    def _log(self, q: RecallQuery, hits: list[Hit], seconds: float) -> None:
        row = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
               "query": q.query[:2000], "query_id": q.query_id, "mode": q.mode, "hops": q.hops, "k": q.k,
               "filters": {"session": q.session, "kinds": q.kinds, "since": q.since, "until": q.until,
                           "min_score": q.min_score},
               "results": [{"seq": h.seq, "event_id": h.event_id, "score": round(h.score, 4), "hop": h.hop}
                           for h in hits],
               "latency_ms": round(seconds * 1000, 3)}
        line = orjson.dumps(row) + b"\n"
        try:
            fd = os.open(self.store.dir / "retrievals.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)            # one write per record: appends never interleave mid-line
            finally:
                os.close(fd)
        except OSError as exc:
            self.note(f"could not append to the retrieval log: {exc}")


def text_coverage(text: str, qterms: list[QueryTerm]) -> float:
    """reducers.fusion.coverage over an event's text: a word term counts when
    the text holds any of its spellings, an exact term when the text holds it."""
    if not qterms:
        return 0.0
    head = text[:COVERAGE_CHARS]
    present = set(words(head))
    low = None
    held = set()
    for i, t in enumerate(qterms):
        if t.exact:
            low = head.lower() if low is None else low
            if next(iter(t.forms)) in low:
                held.add(i)
        elif not present.isdisjoint(t.forms):
            held.add(i)
    return coverage({str(i) for i in held}, {str(i): t.idf for i, t in enumerate(qterms)})


def _candidate(h: FulltextHit, hop: int) -> Candidate:
    return Candidate(seq=h.seq, session_id=h.session_id, pos=h.pos, ts_ms=h.ts_ms, kind=h.kind, bm25=h.score,
                     speaker=h.speaker, hop=hop, segment=h.segment, offset=h.offset)


def _log_tail_seq(store) -> int:
    from stores.segments import list_segments, read_last_line
    for seg in reversed(list_segments(store.segments_dir)):
        line, _, _ = read_last_line(seg.path)
        if line is not None:
            return orjson.loads(line)["seq"]
    return 0
