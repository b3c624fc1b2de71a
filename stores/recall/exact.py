"""Exact-string queries: every occurrence, newest first.

A query that is an exact string (it holds an identifier, a path, a hash or
an error code, or it is quoted, or it is a phrase rather than a question)
returns every event that holds it verbatim, newest first, ahead of the
ranked part and exempt from diversity: 13 events with the same error text
come back as 13 hits within -k, not as one hit and 12 "redundant" ones.
The index finds the events holding all of its words and exact terms; the
log confirms the whole string (case, accents and runs of spaces aside:
"creme brulee" is an occurrence of "Crème Brûlée", as the index folds
both; reducers/folding.py), and for a
long output its stored content does: such an output holds most words
somewhere, so the index's word alone would make it an "occurrence"."""
from __future__ import annotations

import re

from reducers.folding import fold
from reducers.fusion import Candidate, score_all
from reducers.terms import exact_query_terms, words

OCCURRENCE_LIMIT = 200          # events holding every term, newest first, that are checked for the whole string
# A long output (an artifact) holds most common words somewhere: it is
# checked against its content, not taken on the index's word, within this
# many bytes read a query (past them, an artifact is left out unchecked).
ARTIFACT_BYTES = 1_000_000
# A leading auxiliary asks a question unless a negation follows it: "could
# not connect to server", "can't open file", "does not exist" are error
# texts, the strings people paste to find every occurrence.
_QUESTION = re.compile(r"^\s*(?:(?:what|which|who|whom|whose|when|where|why|how)\b|"
                       r"(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had)\b"
                       r"(?!\s+not\b|['\u2019]t\b))", re.IGNORECASE)


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
    phrase = fold(phrase_of(q.query))
    if len(phrase) < 3:
        return []
    tokens = list(dict.fromkeys(t for w in words(phrase) for t in recaller.fulltext._plain(w)))
    found = recaller.fulltext.holding_all(tokens, exact_query_terms(phrase), filters, OCCURRENCE_LIMIT)
    # Every candidate is read (the newest that merely hold the words must not
    # crowd out older occurrences): small events cost one log read each.
    out, artifact_bytes = [], 0
    for h in found:
        c = Candidate(seq=h.seq, gp=h.gp, ts_ms=h.ts_ms, kind=h.kind,
                      speaker_key=h.speaker_key, chars=h.chars, segment=h.segment, offset=h.offset, traits=h.traits,
                      exact=True)
        recaller._read([c])
        e = recaller._events.get(c.seq)
        if e is None:
            continue
        text = e.get("text") or ""
        if e.get("artifact"):                # the log holds a head/tail preview: check the content
            artifact_bytes += h.chars
            if artifact_bytes > ARTIFACT_BYTES:
                continue
            text = recaller._full_text(e)
        if phrase in fold(" ".join(text.lower().split())):
            out.append(c)
            if len(out) >= q.k:
                break
    score_all(out, set(), 0.0)           # features for display; the score is set by the caller
    out.sort(key=lambda c: (-(c.ts_ms or 0), -c.seq))
    return out
