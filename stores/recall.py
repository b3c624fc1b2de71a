"""`trace recall` as a function: a query in, scored hits out.

One `Recaller` serves many queries (batch mode loads the indexes and the
embedder once). Per query:
  1. candidates from BM25 (body + ctx + exact terms) and, in hybrid or
     vector mode, from the HNSW index, all inside the filters;
  2. their same-session neighbours, so an answer next to its question can
     be lifted by it (reducers/fusion.py);
  3. fused scores (fulltext, vector, recency, task, ledger), then the top
     candidates are read verbatim from the log, task-conditioned and
     MMR re-ranked;
  4. with --hops 2, a second retrieval driven by the identifiers the first
     found, merged and re-ranked; each hit says which hop found it.
Every query is appended to the retrieval log (`retrievals.jsonl`) that the
nightly sweep reads."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import orjson

from reducers.drafts import KINDS
from reducers.fusion import (DELETED, SUPERSEDED, Candidate, mmr, score_candidates, set_task,
                             similarity_matrix, task_factor)
from reducers.redact import MAX_SECRET, redact
from reducers.redact_fields import redact_value
from reducers.reflection import apply_tuning
from reducers.snippets import snippet
from reducers.tasks import TODO_TOOLS, open_loops_text
from reducers.terms import exact_query_terms, exact_terms, query_words, words
from stores.errors import UsageError
from stores.fulltext import FulltextIndex
from stores.fulltext_search import Filters, FulltextHit
from stores.ledger import ledger_marks
from stores.segments import read_event_at
from stores.sweep.tuning import load_boosts
from stores.vectors import EMBED_KINDS

MAX_QUERY_CHARS = 10_000
CANDIDATES = 100
NEIGHBOUR_ANCHORS = 30
RERANK_POOL = 40
HOP2_SEEDS = 3
HOP2_TERMS = 4
HOP2_DECAY = 0.85
HOP2_MAX_DF = 50              # a term in more events than this is not an identifier
HOP2_LINES = 2
VECTOR_CATCH_UP_LIMIT = 10_000
MODES = ("hybrid", "fulltext", "vector")


@dataclass
class RecallQuery:
    query: str
    k: int = 10
    session: str | None = None
    kinds: list[str] | None = None
    since: str | None = None
    until: str | None = None
    mode: str = "hybrid"
    hops: int = 1
    min_score: float | None = None
    mmr: float = 0.7
    query_id: str | None = None

    def validate(self) -> list[str]:
        """Raise on usage errors; return warnings."""
        warnings = []
        if not self.query or not self.query.strip():
            raise UsageError("empty query: say what to recall, e.g. trace recall \"docker ssl error\"")
        if len(self.query) > MAX_QUERY_CHARS:
            warnings.append(f"query of {len(self.query)} characters truncated to {MAX_QUERY_CHARS}")
            self.query = self.query[:MAX_QUERY_CHARS]
        if self.mode not in MODES:
            raise UsageError(f"unknown --mode {self.mode!r}; choose one of: {', '.join(MODES)}")
        if self.hops not in (1, 2):
            raise UsageError("--hops is 1 or 2")
        if self.k < 1:
            raise UsageError("-k must be at least 1")
        for kind in self.kinds or ():
            if kind not in KINDS:
                raise UsageError(f"unknown --kind {kind!r}; valid kinds: {', '.join(KINDS)}")
        if not 0.0 <= self.mmr <= 1.0:
            raise UsageError("--mmr is a λ between 0 (all diversity) and 1 (relevance only)")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and parse_time(value) is None:
                raise UsageError(f"--{name} {value!r} is not a time: use ISO 8601 (2026-11-22 or "
                                 f"2026-11-22T14:03:00Z) or a relative age like 3d, 12h, 30m")
        return warnings

    def filters(self) -> Filters:
        return Filters(session=self.session, kinds=self.kinds or None,
                       since_ms=parse_time(self.since) if self.since else None,
                       until_ms=parse_time(self.until) if self.until else None)


def parse_time(text: str, now: float | None = None) -> int | None:
    """ISO 8601, a date, or a relative age (90s, 30m, 12h, 3d, 2w) -> epoch ms."""
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if text[:-1].isdigit() and text[-1:] in units:
        return int(((now or time.time()) - int(text[:-1]) * units[text[-1]]) * 1000)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


@dataclass
class Hit:
    rank: int
    event_id: str
    seq: int
    session_id: str
    ts: str | None
    kind: str
    score: float
    scores: dict
    snippet: str
    text: str
    hop: int = 1
    query_id: str | None = None
    event: dict = field(default_factory=dict, repr=False)

    def as_json(self) -> dict:
        out = {"rank": self.rank, "event_id": self.event_id, "seq": self.seq, "session_id": self.session_id,
               "ts": self.ts, "kind": self.kind, "score": round(self.score, 4), "scores": self.scores,
               "hop": self.hop, "snippet": self.snippet, "text": self.text}
        if self.query_id is not None:
            out = {"query_id": self.query_id, **out}
        return out


class Recaller:
    def __init__(self, store, note=lambda msg: None):
        self.store = store
        self.note = note
        self.fulltext = FulltextIndex(store.dir)
        self._vectors = None
        self._ledger: dict[int, str] | None = None
        self._tuning: dict[str, float] | None = None
        self._tasks: dict[str, set[str]] = {}
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
        t0 = time.perf_counter()
        filters = q.filters()
        qwords, qexact = query_words(q.query), exact_query_terms(q.query)
        qvec = None
        if q.mode != "fulltext" and self.vectors.count:
            qvec = self.vectors.embedder().embed([q.query])[0]
        cands = self._gather(qwords, qexact, qvec, filters, q.mode, hop=1)
        ranked = self._rank(cands, qvec, q)
        if q.hops == 2 and ranked:
            ranked = self._second_hop(ranked, q, qvec, filters)
        hits = self._hits(ranked, q, qwords + qexact)
        self._log(q, hits, time.perf_counter() - t0)
        return hits

    def _gather(self, qwords, qexact, qvec, filters, mode, hop) -> dict[int, Candidate]:
        cands: dict[int, Candidate] = {}
        if mode != "vector":
            for h in self.fulltext.search(qwords, qexact, filters, limit=CANDIDATES):
                cands[h.seq] = _candidate(h, hop)
        if qvec is not None and mode != "fulltext":
            near = self.vectors.search(qvec, CANDIDATES)
            if near:
                for h in self.fulltext.lookup([s for s, _ in near], filters):
                    cands.setdefault(h.seq, _candidate(h, hop))
        if mode != "vector" and cands:
            # Neighbours of the strongest candidates join with score 0, so
            # smoothing can lift the turn next to a match.
            anchors = sorted(cands.values(), key=lambda c: -c.bm25)[:NEIGHBOUR_ANCHORS]
            for h in self.fulltext.neighbours([(c.session_id, c.pos) for c in anchors], 2, filters):
                cands.setdefault(h.seq, _candidate(h, hop))
        if qvec is not None and cands:
            vecs = self.vectors.vectors_for([s for s, c in cands.items() if c.kind in EMBED_KINDS])
            for seq, v in vecs.items():
                cands[seq].cosine = float(v @ qvec)
        return cands

    def _rank(self, cands: dict[int, Candidate], qvec, q: RecallQuery) -> list[Candidate]:
        if not cands:
            return []
        marks = self.ledger
        for c in cands.values():
            mark = marks.get(c.seq)
            c.sup = SUPERSEDED if mark == "UPDATE" else DELETED if mark == "DELETE" else 0.0
        ranked = score_candidates(list(cands.values()))
        pool = ranked[:max(RERANK_POOL, q.k * 3)]
        events = self._read(pool)
        for c in pool:                        # task conditioning needs the text
            task_terms = self._task_terms(c.session_id)
            if task_terms and c.seq in events:
                set_task(c, task_factor(set(words(events[c.seq].get("text", ""))), task_terms))
        apply_tuning(pool, events, self.tuning)       # the nightly reflection's term boosts (all >= 1)
        # Task factors are >= 1 and only the pool got one: nothing outside
        # it can overtake, so re-sorting the pool is enough.
        pool = sorted((c for c in pool if c.seq in events), key=lambda c: (-c.score, c.seq))
        vecs = self.vectors.vectors_for([c.seq for c in pool if c.kind in EMBED_KINDS]) if qvec is not None else {}
        sim = similarity_matrix([set() if c.seq in vecs else self._word_set(events, c.seq) for c in pool],
                                [vecs.get(c.seq) for c in pool])
        at = {c.seq: i for i, c in enumerate(pool)}
        self._events = events
        return mmr(pool, max(q.k, 1) * 2, q.mmr, lambda a, b: sim[at[a.seq]][at[b.seq]])

    def _second_hop(self, first: list[Candidate], q: RecallQuery, qvec, filters) -> list[Candidate]:
        """Follow what the first hop found. From each of the top hits, the
        identifiers (paths, hashes, addresses, names with digits) on the lines
        that match the question best and that also appear in other events —
        a term found only in its own event leads nowhere — drive a second
        search. A hit found that way scores at least its seed's score times
        HOP2_DECAY times how well it matched, so a strong seed's link lands
        right after the seed instead of behind the first hop's weak tail."""
        qwords = set(query_words(q.query))
        seen_terms = set(exact_query_terms(q.query)) | qwords
        merged = {c.seq: c for c in first}
        shown = {c.seq for c in first[:q.k]}          # what the first hop alone would have returned
        used: set[str] = set()
        for seed in first[:HOP2_SEEDS]:
            terms = self._hop_terms(seed, qwords, seen_terms | used)
            if not terms:
                continue
            used.update(terms)
            found = self._gather([], terms, None, filters, "fulltext", hop=2)
            found.pop(seed.seq, None)             # the seed holds its own terms: not a link
            best = max((c.bm25 for c in found.values()), default=0.0) or 1.0
            for seq, c in found.items():
                floor = seed.score * HOP2_DECAY * (c.bm25 / best)
                if seq in merged:
                    merged[seq].floor = max(merged[seq].floor, floor)
                    if seq not in shown:
                        merged[seq].hop = 2               # lifted into view by the link
                else:
                    c.floor = floor
                    merged[seq] = c
        if not used:
            return first
        if qvec is not None:
            missing = [s for s, c in merged.items() if c.cosine is None and c.kind in EMBED_KINDS]
            for seq, v in self.vectors.vectors_for(missing).items():
                merged[seq].cosine = float(v @ qvec)
        events_before = self._events
        ranked = self._rank(merged, qvec, q)
        self._events = {**events_before, **self._events}
        return ranked

    def _hop_terms(self, seed: Candidate, qwords: set[str], skip: set[str]) -> list[str]:
        text = self._events.get(seed.seq, {}).get("text", "")
        lines = [ln for ln in text.splitlines() if ln.strip()][:2000]
        lines.sort(key=lambda ln: -len(qwords & set(words(ln))))
        terms: dict[str, tuple] = {}
        for line_rank, line in enumerate(lines[:HOP2_LINES]):
            for t in exact_terms(line):
                if t in skip or t in terms or len(t) < 4 or t.isdigit():
                    continue
                df = self.fulltext.doc_freq(t)
                if 2 <= df <= HOP2_MAX_DF:
                    terms[t] = (line_rank, -_identifier_strength(t), df)
        return sorted(terms, key=lambda t: terms[t])[:HOP2_TERMS]

    def _hits(self, ranked: list[Candidate], q: RecallQuery, terms: list[str]) -> list[Hit]:
        hits = []
        for c in ranked:
            if len(hits) >= q.k:
                break
            if q.min_score is not None and c.score < q.min_score:
                continue
            e = self._events.get(c.seq)
            if e is None:
                continue
            text = e.get("text", "")
            scores = {k: (round(v, 4) if v is not None else None) for k, v in c.scores.items()}
            hits.append(Hit(rank=len(hits) + 1, event_id=e["id"], seq=e["seq"], session_id=e["session_id"],
                            ts=e.get("ts") or e.get("ingested_at"), kind=e["kind"], score=c.score,
                            scores=scores, snippet=snippet(text, terms), text=text, hop=c.hop,
                            query_id=q.query_id, event=e))
        return hits

    # -- helpers ---------------------------------------------------------------

    def _read(self, cands: list[Candidate]) -> dict[int, dict]:
        out = {}
        for c in cands:
            e = read_event_at(self.store.segments_dir, c.segment, c.offset)
            if e is not None and e.get("seq") == c.seq:
                out[c.seq] = e
        return out

    @staticmethod
    def _word_set(events: dict, seq: int) -> set[str]:
        return set(words(events.get(seq, {}).get("text", "")[:4000]))

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
               "query": redact(q.query[:2000 + MAX_SECRET])[0][:2000],       # redacted before the cut
               "query_id": q.query_id, "mode": q.mode, "hops": q.hops, "k": q.k,
               "filters": {"session": q.session, "kinds": q.kinds, "since": q.since, "until": q.until,
                           "min_score": q.min_score},
               "results": [{"seq": h.seq, "event_id": h.event_id, "score": round(h.score, 4), "hop": h.hop}
                           for h in hits],
               "latency_ms": round(seconds * 1000, 3)}
        line = orjson.dumps(redact_value(row)[0]) + b"\n"      # a query may quote a secret
        try:
            fd = os.open(self.store.dir / "retrievals.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)            # one write per record: appends never interleave mid-line
            finally:
                os.close(fd)
        except OSError as exc:
            self.note(f"could not append to the retrieval log: {exc}")


def _identifier_strength(term: str) -> int:
    """How much a term looks like a thing you can follow: path separators,
    addresses, assignments and length count; a bare word_12 barely does."""
    return 3 * sum(term.count(c) for c in "/@=:") + 2 * term.count(".") + min(len(term), 40) // 8


def _candidate(h: FulltextHit, hop: int) -> Candidate:
    return Candidate(seq=h.seq, session_id=h.session_id, pos=h.pos, ts_ms=h.ts_ms, kind=h.kind, bm25=h.score,
                     hop=hop, segment=h.segment, offset=h.offset)


def _log_tail_seq(store) -> int:
    from stores.segments import list_segments, read_last_line
    for seg in reversed(list_segments(store.segments_dir)):
        line, _, _ = read_last_line(seg.path)
        if line is not None:
            return orjson.loads(line)["seq"]
    return 0
