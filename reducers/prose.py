"""Prose in agent sessions: the sentences of a message, and the clauses of
a sentence. Fenced code, quoted lines, tables and headings are not prose."""
from __future__ import annotations

import re

MAX_SENTENCE = 400

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
# A sentence ends at . ! ? before any word, a lowercase one too ("Summaries
# get cut off. max_tokens is now 2048"), except after an abbreviation.
_SPLIT = re.compile(r"(?<=[.!?])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bcf\.)(?<!\bno\.)(?<!\bapprox\.)"
                    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bProf\.)(?<!\bSt\.)"   # a title before a name
                    r"\s+(?=[\w\"'`*(\[])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_CLAUSE = re.compile(r"(?:,|(?<!\s))\s+(?:and then|and|but|also)\s+(?=\S)|;\s+|,\s+then\s+", re.I)


def clauses(sentence: str) -> list[str]:
    """A sentence cut at its coordinating conjunctions: "set X to A and we
    decided B" states two facts. (A value never spans an "and": the rules
    end values there anyway.)"""
    return [c for c in _CLAUSE.split(sentence) if c] if (" and " in sentence or ";" in sentence
                                                        or " but " in sentence or " then " in sentence
                                                        or " also " in sentence) else [sentence]


def sentences(text: str) -> list[str]:
    """Prose sentences of a message: fenced code, quoted lines, tables and
    headings left out; bullets and emphasis stripped."""
    if "```" in text:
        text = _FENCE.sub("\n", text)
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if not s or s[0] in ">|#" or s.startswith(("$ ", "    ")):
            continue
        for part in _SPLIT.split(_BULLET.sub("", s)):
            part = part.strip().replace("**", "")
            if 8 <= len(part) <= MAX_SENTENCE:
                out.append(part)
    return out
