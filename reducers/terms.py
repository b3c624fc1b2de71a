"""Terms for the full-text index and for queries.

Two views of the same text:
- words: what English stemming works on (the `body` field, analysed by
  Tantivy's en_stem); queries drop stopwords so "when did the deploy fail"
  ranks by "deploy" and "fail", not by "the".
- exact terms: the strings people recall character for character — hashes,
  paths, e-mail addresses, URLs, identifiers, error codes, key=value — kept
  whole, plus their parts (a path's segments, an address's user and domain,
  a hash's short prefixes), lowercased, for the `exact` field.

Both are pure functions of the text; the index and the query use the same
code, so whatever was indexed is what a query can name."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from reducers.cjk import spaced
from reducers.folding import fold

MAX_TERM_CHARS = 256
STOPWORDS = frozenset("""
a about above after again against all am an and any are aren as at be because been before being below
between both but by can could couldn did didn do does doesn doing don down during each ever few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is
isn it its itself just let ll me might more most must my myself no nor not now of off on once only or other
our ours ourselves out over own re s same shall she should so some such t than that the their theirs them
themselves then there these they this those through to too under until up ve very was wasn we were weren
what when where which while who whom why will with won would wouldn y you your yours yourself yourselves
""".split())
# Replies that ask for nothing ("ok", "thanks", "go on"): no query, no request.
TRIVIAL_WORDS = frozenset({"ok", "okay", "yes", "no", "thanks", "thank", "thx", "sure", "continue", "go", "on",
                           "please", "yep", "nope", "k", "done", "next", "cool", "great", "good", "fine", "y", "n"})

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Where combining marks live (Latin's accents, Indic vowel signs, viramas and
# nuktas, Hebrew and Arabic points, ...): Python's \w holds no mark, so "बंद"
# would split into "ब" and "द" where the index's tokenizer keeps "बंद".
_MARK_SPANS = ((0x0300, 0x1DFF), (0x20D0, 0x20FF), (0xA670, 0xABFF), (0xFE00, 0xFE2F))
# A candidate exact token: a whitespace-separated word, cut at quotes and
# brackets, that holds a "structural" character (/ \ . : = @ # _ -) or mixes
# letters and digits. Splitting on whitespace first and testing each
# distinct word with a set is ~3x faster than one big regex in CPython.
_CANDIDATE = re.compile(r"[^\s\"'`<>()\[\]{},;|]+")
_DELIMITERS = re.compile(r"[\"'`<>()\[\]{},;|]+")
_MAYBE_STRUCTURAL = frozenset("/\\.:=@#_-0123456789")
_STRUCTURAL = re.compile(r"[/\\.:=@#_\-]|[A-Za-z][0-9]|[0-9][A-Za-z]")
_EDGE_PUNCT = ".,:;!?*"
_NAMING = re.compile(r"[^\W_]")       # a letter or digit
_PART_SPLIT = re.compile(r"[/\\=@:,?&#]+")
_HEX = re.compile(r"^[0-9a-f]{7,}$")
_SHORT_PREFIXES = (7, 8, 10, 12)
# The body's tokenizer drops a word over 40 bytes (UTF-8): a long identifier
# (AbstractSingletonProxyFactoryBean…), a German compound, a Russian word of
# 21+ letters. Such a word is an exact term instead, as written, so it stays
# findable; a word of 13 characters or fewer cannot be that long.
LONG_WORD_BYTES = 40
# Pictographs and signs (✅ ❌ ⚠ 🚀 🔥 ⏰): no tokenizer keeps them, yet tool
# output and status lines mark outcomes with them. Each is an exact term of
# its own (a variation selector or a joiner between them is no term).
_SYMBOL = re.compile("[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff]")
_LONG_WORD_CHARS = LONG_WORD_BYTES // 3


@lru_cache(maxsize=1)
def _marked_word() -> re.Pattern:
    """A word of letters and digits with the combining marks written on
    them: a word stays whole, and the index's analyzer splits it (at a
    virama, a nukta) the same way the indexed text was split."""
    codes = [c for a, b in _MARK_SPANS for c in range(a, b + 1) if unicodedata.category(chr(c))[0] == "M"]
    spans: list[list[int]] = []
    for c in codes:
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    marks = "".join(f"{chr(a)}-{chr(b)}" for a, b in spans)
    return re.compile(rf"[^\W_](?:[^\W_]|[{marks}])*")        # a mark alone is no word


def words(text: str, pairs: bool = True) -> list[str]:
    """The words of `text`, lowercased, with their combining marks; a run
    of a spaceless script as its character pairs (reducers/cjk.py), as the
    index holds it, or with `pairs=False` whole, as written (a topic hint a
    reader can read back)."""
    text = (spaced(text) if pairs else text).lower()
    return (_WORD if text.isascii() else _marked_word()).findall(text)


def query_words(query: str, pairs: bool = True) -> list[str]:
    """The content words of a query, stopwords dropped (unless nothing else
    is left), for the stemmed body field."""
    all_words = words(query, pairs)
    content = [w for w in all_words if w not in STOPWORDS]
    return content or all_words


EXACT_SCAN_CHARS = 200_000              # structured tokens are looked for in the first 200 KB


def exact_terms(text: str) -> list[str]:
    """Exact tokens and their parts, lowercased, unique, in order."""
    if len(text) <= _MEMO_MAX_CHARS:
        return list(_exact_terms_memo(text))     # transcripts repeat texts (re-read files)
    return _exact_terms(text)


_MEMO_MAX_CHARS = 65536


@lru_cache(maxsize=8192)
def _exact_terms_memo(text: str) -> tuple[str, ...]:
    return tuple(_exact_terms(text))


def exact_text(text: str) -> str:
    """exact_terms() joined by spaces: what the index's `exact` field holds."""
    if len(text) <= _MEMO_MAX_CHARS:
        return _exact_text_memo(text)
    return " ".join(_exact_terms(text))


@lru_cache(maxsize=8192)
def _exact_text_memo(text: str) -> str:
    return " ".join(_exact_terms(text))


def _candidates(text: str):
    for word in dict.fromkeys(text.split()):      # code and logs repeat words: look at each once
        if not _MAYBE_STRUCTURAL.isdisjoint(word) or len(word) > _LONG_WORD_CHARS:
            yield from _DELIMITERS.split(word)


def long_words(token: str) -> list[str]:
    """The words of `token` the body's tokenizer drops for their length,
    lowercased (folded as the index folds them: reducers/folding.py)."""
    if len(token) <= _LONG_WORD_CHARS or len(token.encode()) <= LONG_WORD_BYTES:
        return []
    return [w[:MAX_TERM_CHARS] for w in words(token) if len(fold(w).encode()) > LONG_WORD_BYTES]


def symbols(text: str) -> list[str]:
    """The pictographs and signs in `text`, each once, in order."""
    return [] if text.isascii() else list(dict.fromkeys(_SYMBOL.findall(text)))


def _exact_terms(text: str) -> list[str]:
    out: dict[str, None] = dict.fromkeys(symbols(text[:EXACT_SCAN_CHARS]))
    for raw in _candidates(text[:EXACT_SCAN_CHARS]):
        token = raw.strip(_EDGE_PUNCT)
        if len(token) < 3:
            continue
        for word in long_words(token):
            out.setdefault(word)
        if not _STRUCTURAL.search(token):
            continue
        token = token.lower()[:MAX_TERM_CHARS]
        if token in out:
            continue
        out.setdefault(token)
        for part in _PART_SPLIT.split(token):
            part = part.strip(_EDGE_PUNCT + "-_")
            if len(part) >= 2:
                out.setdefault(part)
                if _HEX.match(part) and len(part) > _SHORT_PREFIXES[0] and not part.isdigit():
                    for n in _SHORT_PREFIXES:          # people quote short SHAs (of a 12-hex id too)
                        if n < len(part):
                            out.setdefault(part[:n])
    return list(out)


# English suffixes to try on a word and on its stem; the index keeps words as written,
# and a query keeps the candidates whose stem is the query word's (see fulltext_search).
_SUFFIXES = ("s", "es", "e", "ed", "d", "ing", "er", "ers", "est", "ly", "ment", "ments", "ion",
             "ions", "ation", "ations", "al", "ness", "ity", "ities", "ive", "able", "y", "ies", "ied")


def inflection_candidates(word: str) -> list[str]:
    """Spellings that may share `word`'s English stem: the word, the word
    and its stem with common suffixes, a final y as i, a final consonant
    doubled or undoubled. Over-generates; the caller keeps those that stem
    alike."""
    stems = {word}
    if len(word) > 3:
        for suffix in sorted(_SUFFIXES, key=len, reverse=True):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                stems.add(word[: -len(suffix)])
    out: dict[str, None] = {word: None}
    for stem in sorted(stems):
        bases = [stem]
        if stem.endswith("i"):
            bases.append(stem[:-1] + "y")
        if stem.endswith("y"):
            bases.append(stem[:-1] + "i")
        if len(stem) >= 3 and stem[-1] not in "aeiouwxy" and stem[-2] in "aeiou":
            bases.append(stem + stem[-1])                 # stop -> stopped, plan -> planning
        if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
            bases.append(stem[:-1])                       # stopping -> stop
        for base in bases:
            out.setdefault(base)
            for suffix in _SUFFIXES:
                out.setdefault(base + suffix)
    return list(out)


def exact_query_terms(query: str) -> list[str]:
    """The exact terms a query names: only whole structured tokens (and the
    hash prefixes they imply), not every part — a query for
    `/srv/app/payments.yaml` should not match every file under /srv."""
    out: dict[str, None] = {}
    for m in _CANDIDATE.finditer(query):
        token = m.group(0).strip(_EDGE_PUNCT)
        # A run of punctuation alone (`---`, `===`, `#::`) names nothing: a
        # query of only such runs has nothing to search for (exit 3).
        if len(token) >= 3 and _STRUCTURAL.search(token) and _NAMING.search(token):
            out.setdefault(token.lower()[:MAX_TERM_CHARS])
        elif len(token) >= 3:
            for word in long_words(token):
                out.setdefault(word)
    for symbol in symbols(query):
        out.setdefault(symbol)
    return list(out)
