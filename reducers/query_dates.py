"""Dates a query names, and how close an event's time is to them.

A question about a conversation often pins its moment: "what did Tim say
on 16 November, 2023", "what did Maria start in December 2023", "who
joined in May". A store whose events carry their session's time can use
that; a plain index cannot. `named_spans` reads the calendar dates a query
names (a day, a month, a year; a month or day without a year stands for
that date in any year), and `date_closeness` says how near an event's
time is to the closest of them: 1 inside the span, falling off after it
with a half-life of a week (people report what they did in the days
after: "on May 3" is told on May 4) and faster before it."""
from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import NamedTuple

AFTER_HALF_LIFE_DAYS = 7.0
BEFORE_HALF_LIFE_DAYS = 1.0
_DAY_MS = 86_400_000

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = r"(January|February|March|April|May|June|July|August|September|October|November|December|" \
         r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_SEP = r",?\s*"
# Every form holds a month (each name starts with one of these, as written)
# or a year: a text with neither names no date, and the patterns are not
# even compiled (a cold `trace recall` asks one question: compiling them
# cost more than the rest of this module).
_MONTH_HEADS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_CENTURIES = ("19", "20")


@lru_cache(maxsize=1)
def _forms() -> list[tuple[str, re.Pattern]]:
    """Longest forms first; each match consumes its text so a shorter form does not read it again."""
    return [
        ("dmy", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}{_SEP}{_YEAR}\b")),
        ("mdy", re.compile(rf"\b{_MONTH}\s+{_DAY}{_SEP}{_YEAR}\b")),
        ("my", re.compile(rf"\b{_MONTH}{_SEP}{_YEAR}\b")),
        ("dm", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b")),
        ("md", re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:am|pm|%|:))")),
        # A bare month only after a word that makes it a time ("in May", not "May I").
        ("m", re.compile(rf"\b(?:in|on|during|since|by|until|before|after|early|late|mid|of|last|this|next)"
                         rf"[\s-]+{_MONTH}\b")),
        ("y", re.compile(rf"\b{_YEAR}\b")),
    ]


class Span(NamedTuple):
    year: int | None        # None: the month (or day) in any year
    month: int | None       # None: the whole year
    day: int | None


def named_spans(text: str) -> list[Span]:
    """The calendar dates a text names (see the module docstring)."""
    if not any(head in text for head in _MONTH_HEADS) and not any(c in text for c in _CENTURIES):
        return []
    spans: list[Span] = []
    rest = text
    for form, rx in _forms():
        for m in rx.finditer(rest):
            g = m.groups()
            try:
                if form == "dmy":
                    span = Span(int(g[2]), _MONTHS[g[1].lower()], int(g[0]))
                elif form == "mdy":
                    span = Span(int(g[2]), _MONTHS[g[0].lower()], int(g[1]))
                elif form == "my":
                    span = Span(int(g[1]), _MONTHS[g[0].lower()], None)
                elif form == "dm":
                    span = Span(None, _MONTHS[g[1].lower()], int(g[0]))
                elif form == "md":
                    span = Span(None, _MONTHS[g[0].lower()], int(g[1]))
                elif form == "m":
                    span = Span(None, _MONTHS[g[0].lower()], None)
                else:
                    span = Span(int(g[0]), None, None)
            except KeyError:
                continue
            if span.day is not None and not 1 <= span.day <= 31:
                continue
            spans.append(span)
        rest = rx.sub(" ", rest)
    return list(dict.fromkeys(spans))


def _bounds(span: Span, year: int) -> tuple[int, int] | None:
    """[start, end) of a span in epoch ms (UTC), in `year` when it names none."""
    y = span.year if span.year is not None else year
    try:
        if span.month is None:
            start, end = datetime(y, 1, 1), datetime(y + 1, 1, 1)
        elif span.day is None:
            start = datetime(y, span.month, 1)
            end = datetime(y + (span.month == 12), span.month % 12 + 1, 1)
        else:
            start = datetime(y, span.month, span.day)
            end = start + timedelta(days=1)
    except ValueError:                    # 31 February
        return None
    ms = lambda d: int(d.replace(tzinfo=timezone.utc).timestamp() * 1000)
    return ms(start), ms(end)


def date_closeness(ts_ms: int, spans: list[Span]) -> float:
    """1 when the time falls inside a named span, halving every
    AFTER_HALF_LIFE_DAYS after its end and every BEFORE_HALF_LIFE_DAYS
    before its start; the best over the spans; 0 with none or no time."""
    if not spans or ts_ms <= 0:
        return 0.0
    year = datetime.fromtimestamp(ts_ms / 1000, timezone.utc).year
    best = 0.0
    for span in spans:
        # A span without a year: the nearest of its occurrences (this year's or last year's).
        for y in ((year, year - 1) if span.year is None else (span.year,)):
            bounds = _bounds(span, y)
            if bounds is None:
                continue
            start, end = bounds
            if start <= ts_ms < end:
                return 1.0
            if ts_ms >= end:
                v = 0.5 ** ((ts_ms - end) / _DAY_MS / AFTER_HALF_LIFE_DAYS)
            else:
                v = 0.5 ** ((start - ts_ms) / _DAY_MS / BEFORE_HALF_LIFE_DAYS)
            best = max(best, v)
    return best
