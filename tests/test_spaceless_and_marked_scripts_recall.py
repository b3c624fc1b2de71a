"""Words inside lines of Thai, Lao, Khmer and Myanmar (written without
spaces between words, letters carrying combining marks) and Devanagari
words with combining marks (vowel signs, anusvara, virama, nukta) are
found by a query naming them, as a user of those scripts types them:
the spaceless runs are indexed and queried as pairs of their letters
(reducers/cjk.py), and a query's words keep their marks so the index's
analyzer splits them as it split the text (reducers/terms.py)."""
from __future__ import annotations

import pytest

from reducers.cjk import spaced
from reducers.terms import words
from tests.helpers import store_with_lines

FACTS = [  # (a line inside a long tool output, questions naming words inside it, the value sought)
    ("เซิร์ฟเวอร์ฐานข้อมูลล่มเมื่อคืนนี้เพราะดิสก์เต็ม รหัส TH-3391", ["ฐานข้อมูล", "เมื่อคืน", "ดิสก์เต็ม"], "TH-3391"),
    ("ຂ້ອຍຈະກວດສອບເຊີບເວີຖານຂໍ້ມູນໃນມື້ອື່ນ ລະຫັດ LA-5512", ["ຖານຂໍ້ມູນ", "ກວດສອບ"], "LA-5512"),
    ("ម៉ាស៊ីនមេទិន្នន័យបានគាំងកាលពីយប់មិញ លេខ KH-7720", ["ទិន្នន័យ", "យប់មិញ"], "KH-7720"),
    ("ဒေတာဘေ့စ်ဆာဗာသည်မနေ့ညကပျက်သွားသည် နံပါတ် MM-1184", ["ဒေတာဘေ့စ်", "မနေ့ည"], "MM-1184"),
    ("डेटाबेस सर्वर कल रात क्षेत्रीय नेटवर्क की वजह से बंद हो गया, कोड HI-6021", ["बंद हो गया", "क्षेत्रीय"],
     "HI-6021"),
    ("प्रधानमंत्री कार्यालय ने क़ानून द्वारा नई नीति जारी की, कोड HI-8830", ["क़ानून", "प्रधानमंत्री"], "HI-8830"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return store_with_lines(tmp_path_factory.mktemp("scripts"), [fact for fact, _, _ in FACTS], seed=23,
                            turns=80, flood_words=300)


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
@pytest.mark.parametrize("fact,query,value", [(f, q, v) for f, qs, v in FACTS for q in qs],
                         ids=[q for _, qs, _ in FACTS for q in qs])
def test_a_word_inside_a_line_of_these_scripts_finds_it_first(store, mode, fact, query, value):
    hits = store.recall(query, k=3, mode=mode).hits
    assert hits and value in hits[0].text, [h.text[:80] for h in hits]
    assert value in hits[0].snippet          # the snippet shows the line, marks and all


def test_a_spaceless_run_is_its_letter_pairs_with_the_marks_dropped():
    # ข้อมูล: ข, tone mark, อ, ม, vowel sign u, ล -> the letters ขอมล, paired
    assert spaced("ข้อมูล").split() == ["ขอ", "อม", "มล"]
    assert words("ข้อมูล") == words("ขอมูล") == words("ข้อมุล")     # a mark typed or not, the same pairs
    assert spaced("ก") == " ก "
    assert spaced("TH-3391 ok") == "TH-3391 ok"


def test_unmarked_text_maps_each_letter_back_to_where_it_was_written():
    from reducers.cjk import unmarked
    bare, origin = unmarked("ok ข้อมูล")
    assert bare == "ok ขอมล" and [("ok ข้อมูล")[i] for i in origin] == list(bare)
    assert unmarked("plain") == ("plain", None) and unmarked("ขอ") == ("ขอ", None)


def test_a_query_word_keeps_its_combining_marks():
    assert words("बंद हो गया") == ["बंद", "हो", "गया"]
    assert words("क्षेत्रीय") == ["क्षेत्रीय"]
    assert words("cafe\u0301 au lait") == ["cafe\u0301", "au", "lait"]
    assert words("snake_case v2") == ["snake", "case", "v2"]
    assert words("\u0301\u0301 \u094d") == []                     # a mark alone is no word: nothing to search
