"""What a line says and what a question asks for (reducers/turn_traits.py),
kept per event by the full-text index and weighed by recall
(reducers/fusion.py): a "when" question prefers the line that names a time,
a "how many" question the line with a number; the named speaker's line
that only asks back counts less."""
from __future__ import annotations

import json
import sqlite3

from reducers.fusion import Candidate, features, score_all
from reducers.turn_traits import (ASKS, COUNT, NUMBER, QUOTE, TIME, WHAT, WHEN, line_traits, matches,
                                  question_form)
from stores.index.fulltext import SCHEMA_VERSION, FulltextIndex
from stores.recall import Recaller
from stores.store import Store


def test_a_line_that_names_a_time_has_the_time_bit():
    for line in ("Ann: I went to the support group yesterday.", "Bo: We moved here last month",
                 "Ann: Two weeks ago I started painting", "Bo: It was in May, on a Friday",
                 "Ann: I've played since 2016"):
        assert line_traits(line, "user") & TIME, line
    assert not line_traits("Ann: I love painting sunsets over the lake", "user") & TIME


def test_numbers_questions_and_quotes_have_their_bits():
    assert line_traits("Bo: I have three turtles", "assistant") & NUMBER
    assert line_traits("Bo: We ran 12 km", "assistant") & NUMBER
    assert not line_traits("Bo: I have turtles", "assistant") & NUMBER
    assert line_traits("Ann: Did you like it? I did.", "user") & ASKS
    assert not line_traits("Ann: What a day.", "user") & ASKS
    assert line_traits('Ann: I just read "Becoming Nicole" again', "user") & QUOTE


def test_tool_output_has_no_traits():
    # a log's dates and counts are data, not a reply to a question
    assert line_traits("2024-05-01 12 files changed since yesterday?", "tool_result") == 0


def test_question_form_reads_how_the_question_opens():
    assert question_form("When did Caroline go to the support group?") == WHEN
    assert question_form("How long has Nate had his turtles?") & WHEN
    assert question_form("How many turtles does Nate have?") & COUNT
    assert question_form("What book did Melanie read?") == WHAT
    assert question_form("Would Caroline pursue counseling?") == 0


def test_matches_pairs_a_trait_with_its_form():
    assert matches(TIME, WHEN, False) == (1.0, 0.0, 0.0, 0.0)
    assert matches(TIME, WHAT, False) == (0.0, 0.0, 0.0, 0.0)
    assert matches(NUMBER, COUNT, False) == (0.0, 1.0, 0.0, 0.0)
    assert matches(ASKS, 0, True) == (0.0, 0.0, 1.0, 0.0)
    assert matches(ASKS, 0, False) == (0.0, 0.0, 0.0, 0.0)
    assert matches(QUOTE, WHAT, False) == (0.0, 0.0, 0.0, 1.0)


def _pair(traits_a: int, traits_b: int, form: int, named=()):
    a = Candidate(seq=1, gp=1 << 32 | 1, bm25=5.0, speaker_key=7, chars=60, traits=traits_a)
    b = Candidate(seq=2, gp=2 << 32 | 1, bm25=5.0, speaker_key=7, chars=60, traits=traits_b)
    return score_all([a, b], set(named), 10.0, form=form)


def test_a_when_question_ranks_the_line_with_a_time_first():
    out = _pair(0, TIME, question_form("When did Ann move?"))
    assert [c.seq for c in out] == [2, 1] and out[0].z > out[1].z
    assert features(out[0])["time_when"] == 1.0 and features(out[1])["time_when"] == 0.0
    # the same two lines for a question that is not about time: the bit counts for nothing
    out = _pair(0, TIME, question_form("Where did Ann move?"))
    assert out[0].z == out[1].z


def test_fusion_features_are_the_pure_matches():
    for traits in (0, TIME, NUMBER, ASKS, QUOTE, TIME | NUMBER | ASKS | QUOTE):
        for form in (0, WHEN, COUNT, WHAT, WHEN | COUNT | WHAT):
            for named in ((), (7,)):
                c = _pair(traits, traits, form, named)[0]
                f = features(c)
                got = (f["time_when"], f["count_number"], f["named_asks"], f["quoted_what"])
                assert got == matches(traits, form, bool(named)), (traits, form, named)


def test_the_index_keeps_each_lines_traits_and_an_older_index_is_rebuilt(tmp_path):
    src = tmp_path / "chat.jsonl"
    lines = ["Ann: I went to the support group yesterday.", "Bo: That is great! How was it?",
             "Ann: I have three turtles now", "Bo: Lovely turtles"]
    with open(src, "w") as f:
        f.write(json.dumps({"messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                                         for i, t in enumerate(lines)]}) + "\n")
    store = Store(tmp_path / "store")
    list(store.ingest([str(src)], format="openai"))
    Recaller(store).prepare("fulltext")

    texts = {e["seq"]: e["text"] for e in store.events()}

    def traits_now():
        import tantivy
        ft = FulltextIndex(store.dir)
        searcher = ft.open().searcher()
        addrs = [a for _, a in searcher.search(tantivy.Query.all_query(), 100).hits]
        got = dict(zip(searcher.fast_field_values("seq", addrs), searcher.fast_field_values("traits", addrs)))
        ft.close()
        return {texts[s]: t for s, t in got.items()}

    want = {t: line_traits(t, "user") for t in lines}
    assert traits_now() == want
    # A store indexed before the column existed says so in its schema: it is rebuilt, not read.
    db = sqlite3.connect(store.dir / "fulltext" / "positions.db")
    db.execute("UPDATE meta SET value=? WHERE name='schema'", (str(SCHEMA_VERSION - 1),))
    db.commit()
    db.close()
    assert not FulltextIndex(store.dir).usable()
    Recaller(store).prepare("fulltext")
    assert FulltextIndex(store.dir).usable()
    assert traits_now() == want
