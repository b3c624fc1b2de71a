"""Recall matches words the way a search engine does, whatever their
accents and case: "creme brulee" finds "crème brûlée", "ΛΟΓΑΡΙΑΣΜΩΝ"
finds "λογαριασμών". The index holds words folded and a query is folded
the same way (reducers/folding.py); scripts whose marks make other letters
are left alone."""
from __future__ import annotations

import random

import pytest

from reducers.folding import _table, fold, fold_mapped
from reducers.snippets import snippet
from stores.errors import UsageError
from stores.store import Store
from trace_cli.bench.needles import build_session, flood

FACTS = [  # (what a tool printed, mid-way through a long output; a query typed without accents or in capitals; the value)
    ("The dessert order was crème brûlée, ticket 4471.", "creme brulee", "4471"),
    ("Der Übersetzer läuft auf Port 48213.", "ÜBERSETZER lauft", "48213"),
    ("La señal pequeña llegó con el código 90817.", "senal pequena codigo", "90817"),
    ("Η ενημέρωση των λογαριασμών ολοκληρώθηκε: 66120.", "ΛΟΓΑΡΙΑΣΜΩΝ ΕΝΗΜΕΡΩΣΗ", "66120"),
    ("Cuộc họp ở Hà Nội bắt đầu lúc 31577.", "cuoc hop ha noi", "31577"),
    ("Die Straße zum Lager heißt Nordring 27734.", "strasse heisst", "27734"),
    ("The cafe resume sits in drawer 55120.", "CAFÉ résumé", "55120"),      # and the other way round
]


@pytest.mark.parametrize("text, folded", [
    ("Crème Brûlée", "creme brulee"), ("ÜBERSETZER", "ubersetzer"), ("señal pequeña", "senal pequena"),
    ("ΛΟΓΑΡΙΑΣΜΩΝ", "λογαριασμων"), ("λογαριασμών", "λογαριασμων"), ("ΟΔΟΣ οδός", "οδοσ οδοσ"),
    ("Việt Nam", "viet nam"), ("Straße Æsir Øre Łódź", "strasse aesir ore lodz"), ("ﬁle", "file"),
    ("e\u0301te\u0301", "ete"),                      # decomposed accents, as macOS writes file names
    ("ёлка", "елка"), ("ｒｅｐｌｉｃａ １７", "replica 17"), ("Ǽ ǿ", "ae o"),
])
def test_latin_and_greek_letters_lose_their_accents_and_case(text, folded):
    assert fold(text).lower() == folded
    assert fold(fold(text)) == fold(text)


def test_folding_twice_is_folding_once():
    assert all(fold(folded) == folded for folded in _table().values())


@pytest.mark.parametrize("text", [
    "йод Київ ўсь МОСКВА",                        # Cyrillic letters of their own stay (Tantivy lowercases)
    "مرحبا بالعالم", "שלום", "हिन्दी भाषा", "ภาษาไทย",
    "がぎぐ パピプ", "東京クラスタのレプリカ数は", "부산지사의관리서버",
    "plain ascii, unchanged", "emoji 🚀 and — dashes “quotes”",
])
def test_other_scripts_are_left_as_they_are(text):
    assert fold(text) == text


@pytest.mark.parametrize("pointed,plain", [
    ("مَرْحَبًا بالعالم", "مرحبا بالعالم"), ("كَتَبَ المُهَنْدِسُ", "كتب المهندس"),
    ("שָׁלוֹם", "שלום"), ("הַשָּׁרַת־נָפַל׃", "השרת־נפל׃"),         # the maqaf and sof pasuq are no points: they stay
])
def test_hebrew_points_and_arabic_harakat_are_dropped_as_readers_type_without_them(pointed, plain):
    assert fold(pointed) == plain
    folded, origin = fold_mapped(pointed)
    assert folded == plain and [pointed[i] for i in origin] == list(plain)


def test_a_query_without_vowel_points_finds_the_pointed_text(tmp_path):
    from tests.helpers import store_with_lines
    lines = ["كَتَبَ المُهَنْدِسُ التَّقْرِيرَ عن الخادم رمز AR-6620", "הַשָּׁרַת נָפַל בַּלַּיְלָה קוד HE-7731"]
    store = store_with_lines(tmp_path, lines, seed=3, turns=40, flood_words=150)
    for query, value in (("المهندس التقرير", "AR-6620"), ("השרת נפל", "HE-7731")):
        for mode in ("fulltext", "hybrid"):
            (hit, *_) = store.recall(query, k=3, mode=mode).hits
            assert value in hit.text and value in hit.snippet, (query, mode)


def test_the_mapped_fold_knows_where_each_folded_character_came_from():
    text = "ﬁle straße, crème brûlée, ΟΔΟΣ".lower()
    folded, origin = fold_mapped(text)
    assert folded == "file strasse, creme brulee, οδοσ" and len(origin) == len(folded)
    assert text[origin[folded.index("brulee")]:].startswith("brûlée")
    assert text[origin[folded.index(", creme")]:].startswith(", crème")
    assert fold_mapped("crème") == ("creme", None)        # one character for one: the offsets are the same


@pytest.mark.parametrize("words, shown", [(["creme", "brulee"], "crème brûlée"), (["strasse"], "Straße")])
def test_a_snippet_shows_the_accented_words_a_plain_query_named(words, shown):
    text = f"{'ﬁller words, große Teile ' * 40}the {shown} was found{' more filler text' * 40}"
    assert shown in snippet(text, words)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("accents")
    session = build_session(turns=80, needles=0, seed=31)
    rng = random.Random(31)
    for i, (fact, _, _) in enumerate(FACTS):        # each inside a long tool output, mid-way
        session.messages[4 * (3 + 12 * i) + 2]["content"] = f"{flood(rng, 600)}\n{fact}\n{flood(rng, 600)}"
    session.messages[-3]["content"] = "Der Aufzug im Gebäude Süd ist außer Betrieb."
    session.write_openai(tmp / "s.jsonl")
    store = Store(tmp / "store")
    list(store.ingest([str(tmp / "s.jsonl")]))
    return store


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
@pytest.mark.parametrize("fact, query, value", FACTS)
def test_a_query_without_accents_or_in_capitals_finds_the_accented_text(store, mode, fact, query, value):
    hits = store.recall(query, k=3, mode=mode).hits
    assert hits and value in hits[0].text and value in hits[0].snippet, [h.text[:80] for h in hits]


def test_the_accented_query_still_finds_it(store):
    for fact, _, value in FACTS:
        hits = store.recall(fact.split(":")[0].rsplit(" ", 1)[0], k=3, mode="fulltext").hits
        assert hits and value in hits[0].text


def test_an_exact_string_typed_without_accents_is_an_occurrence_of_the_accented_one(store):
    for query in ("gebaude sud ist ausser betrieb", "GEBÄUDE SÜD IST AUSSER BETRIEB", "Gebäude Süd ist außer Betrieb"):
        hits = store.recall(query, k=5, mode="fulltext").hits
        assert hits[0].scores.get("exact") and "Gebäude Süd ist außer Betrieb" in hits[0].text, query
    # another word is not an occurrence, accents or not
    hits = store.recall("gebaude sud ist nicht betrieb", k=5, mode="fulltext").hits
    assert not any(h.scores.get("exact") for h in hits)


def test_a_lone_surrogate_through_the_python_api_is_a_usage_error(store):
    with pytest.raises(UsageError, match=r"^query 'abc \\ud800 def' is not valid UTF-8; pass text in UTF-8$"):
        store.recall("abc \ud800 def")


def test_a_speaker_named_without_accents_is_that_speaker(tmp_path):
    import json
    lines = [("Zoë", "I adopted a cat from the shelter last spring."), ("Marco", "I adopted a dog from the shelter."),
             ("Zoë", "The cat sleeps all day."), ("Marco", "The dog runs all day."),
             ("Élodie Martin", "I adopted nothing, I travel too much."), ("Élodie Martin", "Paris again next week.")]
    path = tmp_path / "talk.jsonl"
    path.write_text("".join(json.dumps({"type": "user", "sessionId": "talk", "uuid": f"u{i}",
                                        "timestamp": f"2026-01-01T00:00:0{i}Z",
                                        "message": {"role": "user", "content": f"{name}: {text}"}},
                                       ensure_ascii=False) + "\n" for i, (name, text) in enumerate(lines)))
    store = Store(tmp_path / "store")
    list(store.ingest([str(path)]))
    for query, name in (("what did zoe adopt", "Zoë"), ("what did ZOË adopt", "Zoë"),
                        ("what did elodie martin adopt", "Élodie Martin")):
        top = store.recall(query, k=3, mode="fulltext").hits[0]
        assert top.text.startswith(f"{name}:") and top.scores["speaker"] > 0, (query, top.text)
