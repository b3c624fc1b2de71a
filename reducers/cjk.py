"""Scripts written without spaces between words (Chinese, Japanese, and
Korean within its spaced words): a run of such characters is one "word" to
a tokenizer that splits at spaces and punctuation, so no word inside
"東京クラスタのレプリカ数は" could be found, and a run over 13 characters
(40 bytes) is dropped from the index altogether. Each run is searched
instead as its overlapping character pairs (a lone character as itself),
the way CJK analyzers index text without a dictionary: a query's pairs are
the pairs of the same word in the text."""
from __future__ import annotations

import re

# Han (with extension A and compatibility ideographs, 々), kana (half-width
# katakana too) and Hangul syllables.
_RUN = re.compile("[\u3005\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                  "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+")
_FIRST = "\u3005"


def pairs(run: str) -> list[str]:
    """A run's overlapping character pairs; a lone character as itself."""
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def spaced(text: str) -> str:
    """`text` with every CJK run replaced by its pairs, spaced apart (the
    rest unchanged): what a word tokenizer then splits into searchable
    words. Text with no character as high as the first CJK one is returned
    as it is, at the cost of one or two C-speed passes."""
    if text.isascii() or max(text) < _FIRST:
        return text
    return _RUN.sub(lambda m: f" {' '.join(pairs(m.group()))} ", text)
