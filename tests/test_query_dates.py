"""Dates a query names (reducers/query_dates.py) and how recall's ranking
uses them: an event from the named day's session outranks the same match
from another day."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from reducers.fusion import Candidate, features, score_all
from reducers.query_dates import Span, date_closeness, named_spans


def ms(y, m, d, h=12) -> int:
    return int(datetime(y, m, d, h, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize("query, spans", [
    ("What did Tim say about his injury on 16 November, 2023?", [Span(2023, 11, 16)]),
    ("What painting did she show on October 13, 2023?", [Span(2023, 10, 13)]),
    ("Which book did he finish on 8th December, 2023?", [Span(2023, 12, 8)]),
    ("the forest picture shared on December 1,2023", [Span(2023, 12, 1)]),
    ("What class did Maria start in December 2023?", [Span(2023, 12, None)]),
    ("When did Melanie go camping in June?", [Span(None, 6, None)]),
    ("How many times has she gone to the beach in 2023?", [Span(2023, None, None)]),
    ("Where was John between August 11 and August 15 2023?", [Span(2023, 8, 15), Span(None, 8, 11)]),
])
def test_the_calendar_dates_a_query_names_are_read(query, spans):
    assert named_spans(query) == spans


@pytest.mark.parametrize("query", ["May I ask about the deploy?", "We march on", "ran 5 miles at 10 am",
                                   "port 8080 on host 12", "what did we decide?"])
def test_words_that_only_look_like_dates_name_none(query):
    assert named_spans(query) == []


def test_closeness_is_one_inside_the_span_and_fades_faster_before_it_than_after():
    day = [Span(2023, 5, 3)]
    assert date_closeness(ms(2023, 5, 3), day) == 1.0
    after, before = date_closeness(ms(2023, 5, 5), day), date_closeness(ms(2023, 4, 30), day)
    assert 0.5 < after < 1.0 and before < 0.25 and after > before
    assert date_closeness(ms(2023, 8, 1), day) < 0.01
    assert date_closeness(ms(2022, 6, 30), [Span(None, 6, None)]) == 1.0      # a month in any year
    assert date_closeness(ms(2023, 5, 3), []) == 0.0 and date_closeness(0, day) == 0.0


def test_an_event_from_the_named_day_outranks_the_same_match_from_another_day():
    def cand(seq, ts):
        return Candidate(seq=seq, gp=seq << 32, ts_ms=ts, bm25=10.0, held=3.0)
    out = score_all([cand(1, ms(2023, 3, 2)), cand(2, ms(2023, 11, 16)), cand(3, ms(2023, 7, 9))], set(), 6.0,
                    spans=named_spans("what did Tim say about his injury on 16 November, 2023?"))
    assert out[0].seq == 2 and features(out[0])["date"] == 1.0
    assert all(features(c)["date"] < 0.01 for c in out[1:])
    # No date named: no feature, the order is left to the other signals.
    plain = score_all([cand(1, ms(2023, 3, 2)), cand(2, ms(2023, 11, 16))], set(), 6.0)
    assert all(features(c)["date"] == 0.0 for c in plain)


def test_a_text_with_no_month_or_year_is_answered_without_the_patterns_and_the_same():
    """The shortcut (no month name, no 19xx/20xx: no date) gives what
    running every pattern gives, on texts with and without dates."""
    import itertools

    import reducers.query_dates as qd

    def every_pattern(text):
        qd._forms.cache_clear()
        heads, centuries = qd._MONTH_HEADS, qd._CENTURIES
        qd._MONTH_HEADS, qd._CENTURIES = ("",), ("",)          # the shortcut never applies
        try:
            return named_spans(text)
        finally:
            qd._MONTH_HEADS, qd._CENTURIES = heads, centuries

    words = ["in", "May", "may", "Maybe", "3rd", "of", "Sept.", "2023", "1999", "19", "sprint", "March,", "on", "12",
             "Dec", "decided", "last", "June", "2101", "20", "x"]
    texts = [" ".join(combo) for combo in itertools.product(words, repeat=3)]
    assert sum(bool(every_pattern(t)) for t in texts) > 100             # dates are among them
    assert all(named_spans(t) == every_pattern(t) for t in texts)
