"""Where a secret rule can start in a text. Every rule (reducers/redact.py)
begins at a trigger word or a fixed distance before one, so the text is
lowered once (bytes, ASCII only, same length) and one Aho-Corasick pass
finds each position and which rules can start there; the shapes with no
prefix are found from a character run instead (reducers/secret_shapes.py
FREE_SCANS)."""
from __future__ import annotations

from ahocorasick_rs import BytesAhoCorasick

from reducers.secret_shapes import FREE_SCAN_MIN, FREE_SCANS


class Triggers:
    """The trigger search of one rule set: rules are (name, trigger words,
    chars before the word it starts), `bits` each rule's bit in a mask."""

    def __init__(self, rules: list[tuple[str, tuple[str, ...], int]], bits: dict[str, int]):
        # Trigger "before|word>after" -> the lowercase word the search looks
        # for, and where rules can start around it: (chars before the word,
        # rules, what those chars must be, what must follow the word, what
        # must not -- all any case -- and the word as it must be written when
        # it has capitals: SK, AKIA, sk>- try nothing at "task" or "Asia").
        entries: dict[str, dict[tuple, int]] = {}
        for name, words, back in rules:
            for trigger in words:
                before, _, word = trigger.rpartition("|")
                word, _, after = word.partition(">")
                # ">!s,iz": not followed by any of these (token>!s: not "tokens")
                nots = tuple(n.encode() for n in after[1:].split(",")) if after.startswith("!") else ()
                after = "" if nots else after
                exact = word.encode() if word != word.lower() else b""
                key = (back + len(before), before.lower().encode(), after.lower().encode(), nots, exact)
                at = entries.setdefault(word.lower(), {})
                at[key] = at.get(key, 0) | bits[name]
        self.words = list(entries)
        self._entries = [tuple((key[0], mask, *key[1:]) for key, mask in entries[w].items()) for w in self.words]
        self._search = BytesAhoCorasick([w.encode() for w in self.words])
        self._free = [(regex, bits[name], chars, lo, hi) for regex, name, chars, lo, hi in FREE_SCANS]
        # a search for each first: most texts have none. Not one alternation:
        # that loses each regex's literal prefix and tries every position.
        self._free_searches = [regex.search for regex, *_ in FREE_SCANS]

    def candidates(self, text: str, start: int = 0) -> list[tuple[int, int]]:
        """Sorted (position >= start, rules that can begin there)."""
        raw = (text[start:] if start else text).encode("ascii", "replace")   # one byte per char
        low = raw.lower()
        hits = self._search.find_matches_as_indexes(low, overlapping=True)   # words may overlap
        free = len(text) - start >= FREE_SCAN_MIN and any(search(text, start) for search in self._free_searches)
        if not hits and not free:
            return []
        at: dict[int, int] = {}
        entries = self._entries
        for i, s, e in hits:
            for back, mask, before, after, nots, exact in entries[i]:
                pos = s - back
                if (pos < 0 or (before and low[pos:s] != before) or (after and low[e:e + len(after)] != after)
                        or (nots and low.startswith(nots, e)) or (exact and raw[s:e] != exact)):
                    continue
                at[pos + start] = at.get(pos + start, 0) | mask
        if free:
            self._free_candidates(text, start, at)
        return sorted(at.items()) if at else []

    def _free_candidates(self, text: str, start: int, at: dict[int, int]) -> None:
        """Where a prefix-less shape can start: the run of its characters
        before the hit, when that run is as long as the shape's head."""
        for regex, mask, chars, lo, hi in self._free:
            for hit in regex.finditer(text, start):
                end = i = hit.start()
                while i > start and end - i <= hi and text[i - 1] in chars:
                    i -= 1
                if i - 1 > start and text[i - 1] == "\\" and text[i] in "nrt":
                    i += 1                     # "\\nMTIz…": the run starts after the escape
                if lo <= end - i <= hi:
                    at[i] = at.get(i, 0) | mask
