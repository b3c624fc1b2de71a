"""What a line says, in a few bits computed once when it is indexed, and
the form of a question, so recall can match the two without reading any
candidate's text: a "when" question is answered by a line that names a
time ("yesterday", "last week", "in May", "2019"), a "how many" question
by one that holds a number, a "what / which / who" question more often by
one that quotes a title; the line that asks a question is rarely the one
that answers it.

Measured on the LoCoMo dev pools (docs/BENCHMARKS.md, "what a turn says"):
each alone moves R@10 by 0.001-0.006 on conversations left out of the fit,
the four together by about 0.012, dated and undated."""
from __future__ import annotations

import re

# Bits of a line's traits (the full-text index's `traits` column).
TIME, NUMBER, ASKS, QUOTE = 1, 2, 4, 8
# Bits of a question's form.
WHEN, COUNT, WHAT = 1, 2, 4

SCAN_CHARS = 2000            # as asks_question: a long tool output's tail says nothing of its form

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_SPANS = "week|weekend|month|year|night|summer|winter|spring|fall|autumn|morning|evening|days|weeks|months|years|time"
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|lately|ago|since"
    rf"|(?:last|next|this|past|previous|coming|few|couple of|every) (?:{_SPANS})"
    rf"|(?:{_MONTHS})|(?:{_DAYS})s?|(?:19|20)\d\d|\d+ (?:days|weeks|months|years)"
    r"|(?:one|two|three|four|five|six|a few|several|couple) (?:days|weeks|months|years))\b", re.I)
_NUMBER = re.compile(r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred"
                     r"|thousand|dozen|first|second|third)\b", re.I)
_QUOTE = re.compile("[\"\u201c][^\"\u201d]{2,60}[\"\u201d]")
ASKS_PATTERN = re.compile(r"\?(?:\s|$|[\"')\]])")           # a '?' ending a clause (not a URL's)

_WHEN_Q = re.compile(r"^\s*(?:when|how long|what (?:year|month|date|day|time)|since when|which (?:year|month|day)"
                     r"|in what year|how many (?:years|months|weeks|days))\b", re.I)
_COUNT_Q = re.compile(r"^\s*how (?:many|much|often|old|far|long)\b", re.I)
_WHAT_Q = re.compile(r"^\s*(?:what|which|where|who|whom|whose|how many|name)\b", re.I)


def line_traits(text: str, kind: str) -> int:
    """The bits of what a dialogue line says. Tool output and other kinds
    get none: their numbers and dates are data, not a reply."""
    if kind not in ("user", "assistant"):
        return 0
    head = text[:SCAN_CHARS]
    return ((TIME if _TIME.search(head) else 0) | (NUMBER if _NUMBER.search(head) else 0)
            | (ASKS if ASKS_PATTERN.search(head) else 0) | (QUOTE if _QUOTE.search(head) else 0))


def question_form(query: str) -> int:
    """The bits of a query's form, from how it opens."""
    return ((WHEN if _WHEN_Q.search(query) else 0) | (COUNT if _COUNT_Q.search(query) else 0)
            | (WHAT if _WHAT_Q.search(query) else 0))


def answer_bits(form: int) -> tuple[int, int, int]:
    """The trait bits that answer a question of this form: (a time for
    "when", a number for "how many", quoted text for "what / which /
    who"), 0 where the form does not ask for it."""
    return (TIME if form & WHEN else 0, NUMBER if form & COUNT else 0, QUOTE if form & WHAT else 0)


def matches(traits: int, form: int, named: bool) -> tuple[float, float, float, float]:
    """The four features recall weighs (reducers/fusion.py, which applies
    answer_bits per candidate): a time for a "when" question, a number for
    a "how many", the named speaker's line that only asks, quoted text for
    a "what / which / who"."""
    time_bit, number_bit, quote_bit = answer_bits(form)
    return (1.0 if traits & time_bit else 0.0,
            1.0 if traits & number_bit else 0.0,
            1.0 if traits & ASKS and named else 0.0,
            1.0 if traits & quote_bit else 0.0)
