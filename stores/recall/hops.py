"""`--hops 2`: follow what the first hop found.

From each of the top hits, the identifiers (paths, hashes, addresses, names
with digits) on the lines that match the question best, and that also
appear in other events (a term found only in its own event leads nowhere),
drive a second search. A hit found that way gets a logit of at least its
seed's, lowered by how much weaker its match is than the best link
(log HOP2_DECAY · bm25 / best), so a strong seed's link lands right after
the seed instead of behind the first hop's weak tail."""
from __future__ import annotations

import math

from reducers.fusion import Candidate
from reducers.terms import exact_query_terms, exact_terms, query_words, words

HOP2_SEEDS = 3
HOP2_TERMS = 4
HOP2_DECAY = 0.85
HOP2_MAX_DF = 50              # a term in more events than this is not an identifier
HOP2_LINES = 2


def second_hop(recaller, first: list[Candidate], q, qvec, filters, named, qterms) -> list[Candidate]:
    qwords = set(query_words(q.query))
    seen_terms = set(exact_query_terms(q.query)) | qwords
    merged = {c.seq: c for c in first}
    shown = {c.seq for c in first[:q.k]}          # what the first hop alone would have returned
    used: set[str] = set()
    recaller._read(first[:HOP2_SEEDS])
    for seed in first[:HOP2_SEEDS]:
        terms = hop_terms(recaller, seed, qwords, seen_terms | used)
        if not terms:
            continue
        used.update(terms)
        found = recaller.gather(recaller.fulltext.query_terms([], terms), None, filters, "fulltext", hop=2)
        found.pop(seed.seq, None)             # the seed holds its own terms: not a link
        best = max((c.bm25 for c in found.values()), default=0.0) or 1.0
        for seq, c in found.items():
            if c.bm25 <= 0:
                continue                      # a neighbour of a link, not a link
            floor = seed.z + math.log(HOP2_DECAY * c.bm25 / best)
            c.bm25 = 0.0                      # its match is to the link, not to the question
            if seq in merged:
                merged[seq].floor = max(merged[seq].floor, floor)
                if seq not in shown:
                    merged[seq].hop = 2           # lifted into view by the link
            else:
                c.floor = floor
                merged[seq] = c
    if not used:
        return first
    recaller.measure(merged, qterms, qvec)
    return recaller.rank(merged, q, named, qterms)


def hop_terms(recaller, seed: Candidate, qwords: set[str], skip: set[str]) -> list[str]:
    text = recaller._events.get(seed.seq, {}).get("text", "")
    lines = [ln for ln in text.splitlines() if ln.strip()][:2000]
    lines.sort(key=lambda ln: -len(qwords & set(words(ln))))
    terms: dict[str, tuple] = {}
    for line_rank, line in enumerate(lines[:HOP2_LINES]):
        for t in exact_terms(line):
            if t in skip or t in terms or len(t) < 4 or t.isdigit():
                continue
            df = recaller.fulltext.doc_freq(t)
            if 2 <= df <= HOP2_MAX_DF:
                terms[t] = (line_rank, -identifier_strength(t), df)
    return sorted(terms, key=lambda t: terms[t])[:HOP2_TERMS]


def identifier_strength(term: str) -> int:
    """How much a term looks like a thing you can follow: path separators,
    addresses, assignments and length count; a bare word_12 barely does."""
    return 3 * sum(term.count(c) for c in "/@=:") + 2 * term.count(".") + min(len(term), 40) // 8
