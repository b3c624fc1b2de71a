"""A recall query (validated, with its filters) and a hit, as the CLI and
the Python API see them."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from reducers.event_kinds import KINDS
from reducers.logged_time import read_ts
from reducers.terms import STOPWORDS, exact_query_terms, words
from stores.errors import NoResult, UsageError, require_utf8
from stores.index.fulltext_search import Filters

MAX_QUERY_CHARS = 10_000        # a longer query is cut...
TRUNCATED_QUERY_CHARS = 2_000   # ...to its first 2,000 characters
MODES = ("hybrid", "fulltext", "vector")
SCORE_DECIMALS = 4              # a hit's score as printed; --min-score gates on that same number
MAX_K = 2**31 - 1               # more hits than any store holds: a larger -k means the same (and fits the log's JSON)
_MS_RANGE = 2**63 - 1           # times are signed 64-bit ms in the index
# TRACE's own working-state snapshots quote the requests they summarise (a
# question would find its own echo first): recalled only when --kind names them.
UNASKED_KINDS = frozenset({"task_state"})


def require_rerank(wanted: bool) -> None:
    """With `wanted` (--rerank), the usage error naming the install command
    when the optional extra is missing (stores/recall/rerank.py require);
    every caller checks here, before any search or store is built. Without
    it, nothing: the rerank module stays unimported on the default path."""
    if wanted:
        from stores.recall.rerank import require
        require()


def require_session(session: str | None) -> None:
    """An empty session (`--session "$SID"` with SID unset, `"session": ""`
    in a --queries line or a tool call) is a usage error: it must not
    search every session."""
    if session is not None and not session.strip():
        raise UsageError("--session is empty: give a session id or a unique prefix of one "
                         "(`trace sessions` lists them)")


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
    mmr: float = 1.0
    rerank: bool = False            # the first DEPTH candidates reranked by the optional model (stores/recall/rerank.py)
    query_id: str | None = None
    # Events the caller already shows (the pack's view): left out before the
    # scores are calibrated, so what is left is scored against itself.
    exclude: frozenset[int] = frozenset()

    def shown(self, seq: int, kind: str) -> bool:
        """Whether a found event may be returned (see UNASKED_KINDS, exclude)."""
        return seq not in self.exclude and (bool(self.kinds) or kind not in UNASKED_KINDS)

    def validate(self) -> list[str]:
        """Raise on usage errors (and NoResult for a query with nothing to
        search for); return warnings."""
        warnings = []
        if not self.query or not self.query.strip():
            raise UsageError("empty query: say what to recall, e.g. trace recall \"docker ssl error\"")
        require_utf8(self.query, "query")             # the CLI and MCP refuse it before it gets here
        if len(self.query) > MAX_QUERY_CHARS:
            warnings.append(f"query of {len(self.query)} characters is over {MAX_QUERY_CHARS}: "
                            f"searching its first {TRUNCATED_QUERY_CHARS}")
            self.query = self.query[:TRUNCATED_QUERY_CHARS]
        require_session(self.session)
        if self.mode not in MODES:
            raise UsageError(f"unknown --mode {self.mode!r}; choose one of: {', '.join(MODES)}")
        if self.hops not in (1, 2):
            raise UsageError(f"--hops {self.hops}: give 1, or 2 to also follow the identifiers the first hop found")
        if self.k < 1:
            raise UsageError(f"-k {self.k}: give how many hits to return, at least 1")
        self.k = min(self.k, MAX_K)
        if isinstance(self.kinds, str):       # kinds="tool_result" from the Python API: one kind, not its letters
            self.kinds = [self.kinds]
        for kind in self.kinds or ():
            if kind not in KINDS:
                raise UsageError(f"unknown --kind {kind!r}; valid kinds: {', '.join(KINDS)}")
        if not 0.0 <= self.mmr <= 1.0:
            raise UsageError(f"--mmr {self.mmr}: give a λ between 0 (all diversity) and 1 (relevance only, the default)")
        if self.min_score is not None and not 0.0 <= self.min_score <= 1.0:
            raise UsageError(f"--min-score {self.min_score}: give a probability between 0 and 1 (0.5 keeps the hits "
                             f"of a query more likely answered than not)")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and parse_time(value) is None:
                raise UsageError(f"--{name} {value!r} is not a time: use ISO 8601 (2026-11-22 or "
                                 f"2026-11-22T14:03:00Z) or a relative age like 3d, 12h, 30m")
        if self.since is not None and self.until is not None and parse_time(self.until) < parse_time(self.since):
            raise UsageError(f"--until {self.until!r} is before --since {self.since!r}: no event can be in "
                             f"between; swap them")
        require_rerank(self.rerank)     # the missing extra is a usage error, named before any search
        if not searchable(self.query):
            raise NoResult(f"nothing to search for in {self.query[:60]!r}: it holds only stop words or "
                           f"punctuation; name the thing itself, e.g. a word, file, error or id")
        return warnings

    def filters(self) -> Filters:
        return Filters(session=self.session, kinds=self.kinds or None,
                       since_ms=parse_time(self.since) if self.since else None,
                       until_ms=parse_time(self.until) if self.until else None)


def printed(score: float) -> float:
    """A score as `trace recall` prints it. --min-score compares this, so a
    script that passes back a printed score keeps the hit it read it from."""
    return round(score, SCORE_DECIMALS)


LIKELY = 0.5        # a calibrated score at which an answer is more likely among the hits than not


def meaning_only_note(q: "RecallQuery", hits: list["Hit"]) -> str | None:
    """What to tell the user when a hybrid recall's hits share no word
    with the query and probably hold no answer: full text alone would have
    said "no hits" (exit 3); the hits stay (a paraphrase can be the
    answer, and a script gates with --min-score, which the calibrated
    score already fails), but they are named for what they are."""
    if q.mode != "hybrid" or not hits or q.min_score is not None or printed(hits[0].score) >= LIKELY:
        return None
    if any(h.scores.get("bm25", 0) > 0 or h.scores.get("coverage", 0) > 0 for h in hits):
        return None
    return (f"no hit holds a word of {q.query[:60]!r}: these are neighbours by meaning only, and weak "
            f"(score {hits[0].score:.2f}; --min-score {LIKELY} keeps only likely answers)")


def searchable(query: str) -> bool:
    """A query with a content word or an exact token in it."""
    return bool(exact_query_terms(query)) or any(w not in STOPWORDS for w in words(query))


def parse_time(text: str, now: float | None = None) -> int | None:
    """ISO 8601, a date, or a relative age (90s, 30m, 12h, 3d, 2w) -> epoch ms."""
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if text[:-1].isdecimal() and text[-1:] in units:        # isdecimal: the digits int() reads
        ms = int((now or time.time()) * 1000) - int(text[:-1]) * units[text[-1]] * 1000     # ints: no overflow
        return max(ms, -_MS_RANGE)          # an age older than time itself means from the start
    dt = read_ts(text)                      # a time with no zone is UTC, as in the log
    return None if dt is None else int(dt.timestamp() * 1000)


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
    abandoned: bool = False          # on a branch its conversation left (stores/recall/branches.py)

    def as_json(self) -> dict:
        out = {"rank": self.rank, "event_id": self.event_id, "seq": self.seq, "session_id": self.session_id,
               "ts": self.ts, "kind": self.kind, "score": printed(self.score), "scores": self.scores,
               "hop": self.hop, "snippet": self.snippet, "text": self.text}
        if self.abandoned:
            out["abandoned"] = True
        if self.query_id is not None:
            out = {"query_id": self.query_id, **out}
        return out
