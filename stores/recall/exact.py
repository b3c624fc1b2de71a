"""Exact-string queries: every occurrence, newest first.

A query that is an exact string (it holds an identifier, a path, a hash or
an error code, or it is quoted, or it is a phrase rather than a question)
returns every event that holds it verbatim, newest first, ahead of the
ranked part and exempt from diversity: 13 events with the same error text
come back as 13 hits within -k, not as one hit and 12 "redundant" ones.
The index finds the events holding all of its words and exact terms; the
log confirms the whole string (case and runs of spaces aside)."""
from __future__ import annotations

import re

from reducers.fusion import Candidate, score_all
from reducers.terms import exact_query_terms, words

OCCURRENCE_LIMIT = 200          # events holding every term, newest first, that may be checked...
MAX_MISSES = 20                 # ...until this many of them turn out not to hold the whole string
_QUESTION = re.compile(r"^\s*(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|"
                       r"should|would|will|has|have|had)\b", re.IGNORECASE)


def looks_exact(query: str) -> bool:
    """A string to find as written, not a question to answer."""
    text = query.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return True
    if text.endswith("?") or _QUESTION.match(text):
        return False            # a question naming an identifier asks about it; it is not the string sought
    return bool(exact_query_terms(text)) or len(words(text)) >= 3


def phrase_of(query: str) -> str:
    text = query.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1]
    return " ".join(text.lower().split())


def occurrences(recaller, q, filters) -> list[Candidate]:
    """The events holding the query verbatim, newest first (at most q.k)."""
    if not looks_exact(q.query):
        return []
    phrase = phrase_of(q.query)
    if len(phrase) < 3:
        return []
    tokens = list(dict.fromkeys(t for w in words(phrase) for t in recaller.fulltext._plain(w)))
    found = recaller.fulltext.holding_all(tokens, exact_query_terms(phrase), filters, OCCURRENCE_LIMIT)
    out, misses = [], 0
    for h in found:
        c = Candidate(seq=h.seq, gp=h.gp, ts_ms=h.ts_ms, kind=h.kind,
                      speaker_key=h.speaker_key, chars=h.chars, segment=h.segment, offset=h.offset, traits=h.traits,
                      exact=True)
        recaller._read([c])
        e = recaller._events.get(c.seq)
        if e is None:
            continue
        text = " ".join((e.get("text") or "").lower().split())
        # An artifact's preview is cut: the index says its full text holds every term.
        if phrase in text or e.get("artifact"):
            out.append(c)
        else:
            misses += 1
        if len(out) >= q.k or misses >= MAX_MISSES:
            break
    score_all(out, set(), 0.0)           # features for display; the score is set by the caller
    out.sort(key=lambda c: (-(c.ts_ms or 0), -c.seq))
    return out
