"""A query word's spellings in the index: the words that share its English
stem (as Tantivy's `en_stem` analyzer gives it) and its irregular forms,
and the stems a snippet looks for."""
from __future__ import annotations

from functools import lru_cache

from reducers.irregular_forms import irregular_forms
from reducers.terms import inflection_candidates

@lru_cache(maxsize=4096)
def spellings(token: str) -> list[str]:
    """`token` and the spellings that share its English stem, and those of
    its irregular forms ("ran" for "run": reducers/irregular_forms.py)."""
    regular = _stem_forms(token)
    out = dict.fromkeys(regular)
    for word in regular:                       # "running" -> "run" -> "ran"
        for other in irregular_forms(word):
            out.update(dict.fromkeys(_stem_forms(other)))
    return list(out)


def _stem_forms(token: str) -> list[str]:
    stem = _stem(token)
    return [c for c in inflection_candidates(token) if c == token or _stem(c) == stem]


def stems(words) -> list[str]:
    """The English stems of these words that are not among them ("owns"
    -> "own"): as a prefix a stem finds the spellings that do not share it
    ("owner"), where a snippet looks for the query."""
    words = set(words)
    found = {s for word in words for s in _stem(word)}
    return sorted(s for s in found - words if len(s) >= 3)


@lru_cache(maxsize=8192)
def _stem(word: str) -> tuple[str, ...]:
    """A word's English stem(s), as the index's stemming analyzer gives
    them (recall asks the same few words again and again)."""
    return tuple(_stemmer().analyze(word))


@lru_cache(maxsize=1)
def _stemmer():
    return word_analyzer(stem=True)


def word_analyzer(stem: bool):
    """Tantivy's `default` analyzer (simple, remove_long 40, lowercase), or
    its `en_stem` (the same plus the English stemmer)."""
    import tantivy
    builder = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
               .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase()))
    if stem:
        builder = builder.filter(tantivy.Filter.stemmer("english"))
    return builder.build()
