"""Accent and case folding, the way a search engine matches words: people
type "creme brulee" for "crème brûlée", "ubersetzer" for "Übersetzer",
"ΛΟΓΑΡΙΑΣΜΩΝ" for "λογαριασμών". The index holds every word folded and a
query is folded the same way, so each spelling finds the others.

What folds: Latin and Greek letters lose their diacritics (é è ê ë -> e,
ñ -> n, ά ώ ΐ -> α ω ι, Vietnamese tone marks too) and are lowercased;
Latin letters with no decomposition take their usual ASCII spelling (ß ->
ss, æ -> ae, ø -> o, ł -> l, đ -> d, þ -> th, dotless ı -> i); Greek final
ς is σ (an upper-case query lowercases to σ mid-word and ς at the end);
Cyrillic ё is е (the two are written interchangeably), while й, ї, ў stay
letters of their own; Hebrew points and Arabic harakat are dropped
("כָּתַב" -> "כתב", "كَتَبَ" -> "كتب": texts carry them or not); full-width
Latin letters, digits and signs (as CJK input methods type them:
"ｒｅｐｌｉｃａ") are their ASCII ones. Everything else is left as it is:
other Cyrillic, Arabic and Hebrew letters, Indic scripts, kana (a voicing mark makes another
syllable) and the CJK runs reducers/cjk.py pairs. Combining marks
U+0300-U+036F left after composition (text in decomposed form, or a mark
with no precomposed letter) are dropped: a word tokenizer would split the
word at them."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_MARKS = (0x0300, 0x036F)          # Combining Diacritical Marks: the accents of Latin, Greek, Cyrillic
# Latin letters that do not decompose into a base letter and a mark.
_LATIN_LETTERS = {"ß": "ss", "ẞ": "ss", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "ø": "o", "Ø": "o",
                  "ł": "l", "Ł": "l", "đ": "d", "Đ": "d", "ð": "d", "Ð": "d", "þ": "th", "Þ": "th",
                  "ı": "i", "ħ": "h", "Ħ": "h", "ŧ": "t", "Ŧ": "t", "ŀ": "l", "Ŀ": "l",
                  "ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
_OTHER_LETTERS = {"ς": "σ", "ё": "е", "Ё": "е"}
# Where the folded letters live: Latin-1 Supplement to Latin Extended-B,
# the marks, Greek and Coptic, Latin Extended Additional, Greek Extended,
# Latin ligatures, full-width ASCII, and ё.
_FULL_WIDTH = (0xFF01, 0xFF5E)
# Hebrew points and cantillation, Arabic harakat (tashkeel) and the superscript
# alef: vowel signs a text may or may not carry ("כָּתַב" / "כתב", "كَتَبَ" / "كتب"),
# dropped as search engines for those scripts drop them.
_POINTS = ((0x0591, 0x05C7), (0x0610, 0x061A), (0x064B, 0x065F), (0x0670, 0x0670))
_RANGES = ((0x00C0, 0x024F), _MARKS, (0x0370, 0x03FF), (0x1E00, 0x1EFF), (0x1F00, 0x1FFF), (0xFB00, 0xFB06),
           _FULL_WIDTH, *_POINTS)
_FOLDABLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _RANGES) + "ёЁ]")
_MARK = re.compile(f"[{chr(_MARKS[0])}-{chr(_MARKS[1])}]")


def _fold_char(ch: str) -> str:
    if ch in _LATIN_LETTERS:
        return _LATIN_LETTERS[ch]
    if ch in _OTHER_LETTERS:
        return _OTHER_LETTERS[ch]
    code = ord(ch)
    if _MARKS[0] <= code <= _MARKS[1]:
        return ""
    if any(a <= code <= b for a, b in _POINTS):
        return "" if unicodedata.category(ch) == "Mn" else ch
    if _FULL_WIDTH[0] <= code <= _FULL_WIDTH[1]:
        ch = chr(code - _FULL_WIDTH[0] + 0x21)
    lower = ch.lower()
    bare = "".join(c for c in unicodedata.normalize("NFD", lower) if not _MARKS[0] <= ord(c) <= _MARKS[1])
    bare = unicodedata.normalize("NFC", bare)        # ǽ -> æ, then as æ is
    return "".join(_LATIN_LETTERS.get(c) or _OTHER_LETTERS.get(c, c) for c in bare) if bare else lower


@lru_cache(maxsize=1)
def _table() -> dict[int, str]:
    chars = [chr(c) for a, b in _RANGES for c in range(a, b + 1)] + ["ё", "Ё"]
    return {ord(ch): folded for ch in chars if (folded := _fold_char(ch)) != ch}


def fold(text: str) -> str:
    """`text` with its Latin and Greek letters (and ё) folded as above, the
    rest unchanged. ASCII text, and text with nothing to fold, comes back
    as it is after a C-speed check."""
    if text.isascii() or not _FOLDABLE.search(text):
        return text
    if _MARK.search(text):
        text = unicodedata.normalize("NFC", text)     # "e" + U+0301 -> "é": a mark on a letter it composes with
    return text.translate(_table())


def fold_mapped(text: str) -> tuple[str, list[int] | None]:
    """fold() for finding a folded word's place in `text` (no composition
    first): the folded text, and for each of its characters the offset in
    `text` it came from, or None when every offset is the same in both
    (nothing folded to two characters or to none: ß, æ, the ligatures and
    lone marks do)."""
    if text.isascii() or not _FOLDABLE.search(text):
        return text, None
    table = _table()
    folded = text.translate(table)
    if len(folded) == len(text) and not _MARK.search(text):
        return folded, None
    origin: list[int] = []
    for i, ch in enumerate(text):
        origin.extend([i] * len(table.get(ord(ch), ch)))
    return folded, origin


@lru_cache(maxsize=1)
def _cased_table() -> dict[int, str]:
    """fold()'s table with each letter's case kept (É -> E, Æ -> Ae, ß -> ss)."""
    out = {}
    for code, folded in _table().items():
        ch = chr(code)
        if ch != ch.lower() and folded:         # ẞ is written in capitals only
            folded = folded.upper() if len(folded) == 1 or ch == "ẞ" else folded[0].upper() + folded[1:]
        if folded != ch:
            out[code] = folded
    return out


def unaccented(text: str) -> str:
    """`text` folded as fold() does but with its case kept: what the vector
    embedder reads (stores/index/embedders.py). Its tokenizer splits "café"
    and "cafe" into different pieces but tells "Cafe" from "cafe" too, so
    only the accents may go. ASCII text comes back as it is."""
    if text.isascii() or not _FOLDABLE.search(text):
        return text
    if _MARK.search(text):
        text = unicodedata.normalize("NFC", text)
    return text.translate(_cased_table())
