"""Who says an event: a transcript that writes turns as "Name: words"
(meeting notes, chat exports, LoCoMo-style dialogue) names its speaker in
a leading label. Recall indexes that label, and a query that names a
speaker lifts that speaker's own turns: a question about what Ana did is
answered by what Ana said, more often than by what others said to her."""
from __future__ import annotations

import re

from reducers.folding import fold

# One to three capitalised words, then ": " — "Ana:", "Dr. Ruiz:", "Mary Ann:",
# "Élodie:" (a word's first letter is checked for a capital below).
_LABEL = re.compile(r"([^\W\d_][\w.'-]{0,30}(?: [^\W\d_][\w.'-]{0,30}){0,2}): \S")
# Labels that announce a kind of line, not a person.
_NOT_PEOPLE = frozenset("""note error warning warn info debug todo fixme usage example output input result
summary question answer step task status update re fwd subject from to cc date tip hint important""".split())


def speaker_of(text: str) -> str:
    """The speaker label an event's text opens with, lowercased and
    folded as the index folds words ("Zoë" is "zoe", reducers/folding.py),
    or ''."""
    m = _LABEL.match(text[:100])
    if not m or not all(word[0].isupper() for word in m.group(1).split(" ")):
        return ""
    label = fold(m.group(1).lower())
    return "" if label in _NOT_PEOPLE else label


def named_speakers(query_words: list[str], known) -> set[str]:
    """Speakers a query names: its words (and adjacent word pairs, for
    two-word names) that `known(label)` says are speaker labels."""
    out = set()
    query_words = [fold(w) for w in query_words]
    for i, w in enumerate(query_words):
        for label in (w, f"{w} {query_words[i + 1]}" if i + 1 < len(query_words) else None):
            if label and known(label):
                out.add(label)
    return out
