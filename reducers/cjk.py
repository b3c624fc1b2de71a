"""Scripts written without spaces between words: Chinese, Japanese, and
Korean within its spaced words; Thai, Lao, Khmer and Myanmar. A run of such
characters is one "word" to a tokenizer that splits at spaces and
punctuation, so no word inside "東京クラスタのレプリカ数は" or
"เซิร์ฟเวอร์ฐานข้อมูลล่ม" could be found, and a run over 13 characters (40
bytes) is dropped from the index altogether. Each run is searched instead
as its overlapping character pairs (a lone character as itself), the way
CJK analyzers index text without a dictionary: a query's pairs are the
pairs of the same word in the text.

In Thai, Lao, Khmer and Myanmar a letter carries combining marks (vowel
signs, tone marks, the virama-like coeng and asat) that the tokenizer
splits words at; they are dropped from a run before it is paired, as
accents are folded in Latin (reducers/folding.py): the pairs are of the
letters, and a query typed with or without a tone mark finds the same
text."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Han (with extension A and compatibility ideographs, 々), kana (half-width
# katakana too) and Hangul syllables.
_CJK = "\u3005\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
# Thai, Lao, Myanmar (with extensions A and B), Khmer (with its symbols).
_SEA_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0xAA60, 0xAA7F), (0xA9E0, 0xA9FF),
               (0x1780, 0x17FF), (0x19E0, 0x19FF))
_SEA = "".join(f"{chr(a)}-{chr(b)}" for a, b in _SEA_RANGES)
_RUN = re.compile(f"[{_CJK}]+|[{_SEA}]+")
_FIRST = "\u0e00"


def pairs(run: str) -> list[str]:
    """A run's overlapping character pairs; a lone character as itself."""
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


@lru_cache(maxsize=1)
def _marks() -> dict[int, None]:
    """The combining marks of the spaceless Southeast Asian scripts: deleted."""
    return {c: None for a, b in _SEA_RANGES for c in range(a, b + 1) if unicodedata.category(chr(c)).startswith("M")}


def _run_pairs(m: re.Match) -> str:
    run = m.group()
    if run[0] >= "\u3005":                          # CJK: the characters as they are
        return f" {' '.join(pairs(run))} "
    letters = run.translate(_marks())
    return f" {' '.join(pairs(letters))} " if letters else " "


def unmarked(text: str) -> tuple[str, list[int] | None]:
    """`text` with the marks of the spaceless Southeast Asian scripts
    dropped (where a snippet looks for a query's letter pairs), and for
    each character left the offset in `text` it came from; None when
    nothing was dropped."""
    if text.isascii() or max(text) < _FIRST:
        return text, None
    bare = text.translate(_marks())
    if len(bare) == len(text):
        return text, None
    marks = _marks()
    return bare, [i for i, ch in enumerate(text) if ord(ch) not in marks]


def spaced(text: str) -> str:
    """`text` with every run of a spaceless script replaced by its pairs,
    spaced apart (the rest unchanged): what a word tokenizer then splits
    into searchable words. Text with no character as high as the first
    such script's (Thai) is returned as it is, at the cost of one or two
    C-speed passes."""
    if text.isascii() or max(text) < _FIRST:
        return text
    return _RUN.sub(_run_pairs, text)
