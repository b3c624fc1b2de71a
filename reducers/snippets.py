"""Snippets: the part of a hit's text that shows why it matched."""
from __future__ import annotations

import re
from bisect import bisect_left
from math import fsum

from reducers.cjk import unmarked
from reducers.folding import fold, fold_mapped

WIDTH = 240
MAX_SPOTS = 64          # occurrences of a term kept as anchors; a term found more often is looked up per window


def snippet(text: str, terms: list[str] | dict[str, float], width: int = WIDTH,
            weights: list[float] | None = None) -> str:
    """A window of about `width` characters where the most of the query
    meets: the one holding the greatest weight of distinct terms
    (case- and accent-insensitive, as substrings), and of equal weights the one where
    they sit closest together, then the first. Terms come most telling
    first; without `weights` each counts less than the one before it, so a
    window with the rarest term and another beats a window with the
    rarest alone. `terms` may come weighed already (`weigh`: once for the
    many hits of one query). Cut at word boundaries, with … where cut."""
    if len(text) <= width:
        return text.strip()
    # "creme" finds "crème", "strasse" "Straße" (the index folds both: reducers/folding.py)
    low, origin = fold_mapped(text.lower())
    # a Thai or Khmer query is its letter pairs, its marks dropped (reducers/cjk.py)
    bare, letters = unmarked(low)
    worth = terms if isinstance(terms, dict) else weigh(terms, weights)
    start = _best_start(bare, worth, width)
    if letters is not None:
        start = letters[start] if start < len(letters) else len(low)
    if origin is not None:
        start = origin[start] if start < len(origin) else len(text)
    end = min(start + width, len(text))
    start = max(end - width, 0)
    if start > 0:
        m = re.search(r"\s", text[start:start + 30])
        start = start + m.end() if m else start
    if end < len(text):
        m = re.search(r"\s\S*$", text[max(end - 30, start):end])
        end = max(end - 30, start) + m.start() if m else end
    body = " ".join(text[start:end].split())
    return f"{'…' if start > 0 else ''}{body}{'…' if end < len(text) else ''}"


def weigh(terms: list[str], weights: list[float] | None = None) -> dict[str, float]:
    """Each term once, lowercased, with its weight (its first one; without
    weights 1, 1/2, 1/3… in order). A spelling that holds a shorter one
    worth as much ("listens", "listen") is found wherever that one is:
    only the shorter is looked for."""
    worth: dict[str, float] = {}
    for i, term in enumerate(terms):
        term = fold(term.lower())
        if term and term not in worth:
            worth[term] = weights[i] if weights is not None else 1.0 / (1 + i)
    return {t: w for t, w in worth.items() if not any(u != t and u in t and worth[u] >= w for u in worth)}


def _best_start(low: str, worth: dict[str, float], width: int) -> int:
    spots: list[tuple[int, str]] = []      # occurrences of the terms found at most MAX_SPOTS times
    common: list[str] = []                 # terms found more often: looked up around each anchor
    for term in worth:
        at = _first(low, term, MAX_SPOTS + 1)
        if len(at) > MAX_SPOTS:
            common.append(term)
        else:
            spots += [(p, term) for p in at]
    if not spots:
        if not common:
            return 0
        top = max(common, key=lambda t: worth[t])      # every term everywhere: anchor on the weightiest
        common.remove(top)
        spots = [(p, top) for p in _first(low, top, MAX_SPOTS)]
    spots.sort()
    first, last = spots[0][0], max(p + len(t) for p, t in spots)
    if common or last - first > width // 2:            # else one stretch holds every occurrence
        first, last = _densest(low, spots, common, worth, width)
    # a quarter of the window before the matched stretch (the answer
    # usually follows the words that name it), less if the stretch needs it
    before = max(min(width // 4, width - (last - first)), 0)
    return max(first - before, 0)


def _densest(low: str, spots: list[tuple[int, str]], common: list[str], worth: dict[str, float],
             width: int) -> tuple[int, int]:
    """The stretch around one occurrence that holds the most weight of
    distinct terms (each at its occurrence nearest the anchor), the tightest
    of equal weights, the first of those."""
    positions = [p for p, _ in spots]
    best, stretch = None, (0, 0)
    step = width // 8                  # anchors closer than this see nearly the same window
    last_anchor = -width
    for anchor, _ in spots:
        if anchor - last_anchor < step:
            continue
        last_anchor = anchor
        lo, hi = max(anchor - width // 2, 0), anchor + width // 2
        nearest: dict[str, int] = {}
        for p, t in spots[bisect_left(positions, lo):bisect_left(positions, hi)]:
            if p + len(t) <= hi and (t not in nearest or abs(p - anchor) < abs(nearest[t] - anchor)):
                nearest[t] = p
        for t in common:
            near = [p for p in (low.rfind(t, lo, anchor + len(t)), low.find(t, anchor, hi)) if p >= 0]
            if near:
                nearest[t] = min(near, key=lambda p: abs(p - anchor))
        first = min(nearest.values())
        last = max(p + len(t) for t, p in nearest.items())
        # fsum: the same words weigh the same whatever order they are met in (so the tie-break decides)
        key = (fsum(worth[t] for t in nearest), first - last, -first)
        if best is None or key > best:
            best, stretch = key, (first, last)
    return stretch


def _first(low: str, term: str, n: int) -> list[int]:
    at: list[int] = []
    i = low.find(term)
    while i >= 0 and len(at) < n:
        at.append(i)
        i = low.find(term, i + 1)
    return at
