"""Snippets: the window of a hit's text that shows why it matched, chosen
where the most of the query meets, not at the first mention of a word."""
from __future__ import annotations

from reducers.snippets import MAX_SPOTS, WIDTH, snippet

FILLER = "2026-03-04T12:25:00Z INFO http request 5515 took 587ms status=500\n"


def test_a_short_text_is_its_own_snippet():
    assert snippet("  port 4431 is open  ", ["port"]) == "port 4431 is open"


def test_the_window_where_the_query_meets_beats_the_first_mention_of_its_rarest_word():
    log = (FILLER * 20 + "WARN payroll sync heartbeat ok\n" + FILLER * 20
           + "payroll sync now listens on port 48213\n" + FILLER * 20)
    shown = snippet(log, ["payroll", "sync", "listens", "port"])
    assert "port 48213" in shown and "heartbeat" not in shown
    assert len(shown) <= WIDTH + 2                         # the window and its two ellipses


def test_of_equal_weight_the_sentence_that_names_them_all_wins():
    """A word the log says everywhere (`"owner":` in each JSON line) is
    looked up around each mention of the rarer ones: the window where the
    terms sit closest together is shown."""
    line = '{"id": 7, "component": "db", "owner": "bo", "check": "ok"}\n'
    log = (line * (MAX_SPOTS + 20) + "INFO nightly rollup heartbeat ok\n" + line * 3
           + "Owner of nightly rollup changed to eli.98@corp.example\n" + line * 40)
    shown = snippet(log, ["nightly", "rollup", "own"], weights=[6.6, 6.6, 5.5])
    assert "eli.98@corp.example" in shown


def test_windows_holding_the_same_words_tie_whatever_order_they_are_met_in():
    # 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in floating point: summed in the
    # order met, the loose window below outweighed the tight one (seen on a
    # needle in a log, where a heartbeat line and a JSON field were chosen
    # over the line that stated the fact).
    weights = {"alpha": 0.1, "beta": 0.2, "gamma": 0.3}
    loose = "alpha one two three four beta five six seven eight gamma"
    tight = "gamma beta alpha stated together"
    text = f"{'filler words here ' * 20}{loose}{' padding words' * 30} {tight}{' closing words' * 30}"
    assert "gamma beta alpha" in snippet(text, weights)


def test_weights_choose_between_windows_holding_different_words():
    text = "alpha " * 60 + "the rare zq-17 code " + "beta " * 60 + "common words here " + "gamma " * 60
    assert "zq-17" in snippet(text, ["common", "zq-17"], weights=[1.0, 9.0])
    assert "common words" in snippet(text, ["common", "zq-17"], weights=[9.0, 1.0])


def test_no_term_found_shows_the_start():
    text = "first words " + "x " * 300
    assert snippet(text, ["absent"]).startswith("first words")


def test_a_query_words_stem_finds_the_spellings_it_does_not_share_a_stem_with():
    """"who owns X" is answered by "Owner of X": the stem "own" joins the
    snippet's terms (as a substring it finds "owner")."""
    from stores.index.spellings import stems
    assert stems(["owns"]) == ["own"]
    assert stems(["port", "ports"]) == []            # the stem is already one of them
    assert stems(["listening", "listens"]) == ["listen"]
