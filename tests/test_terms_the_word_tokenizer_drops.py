"""What the body's word tokenizer drops is an exact term instead, and
found: words over 40 bytes (a long identifier, a German compound, a
Russian word of 21+ letters) and pictographs (✅ ❌ ⚠️ 🚀), which status
lines mark outcomes with; a 7-character prefix of a 12-hex id (a short
SHA, a container image id) finds it as the prefix of a full SHA does."""
from __future__ import annotations

import pytest

from reducers.terms import exact_query_terms, exact_terms
from tests.helpers import store_with_lines

FACTS = [  # (a line inside a long tool output, the query, what the hit must hold)
    ("the failing class is AbstractSingletonProxyFactoryBeanConfigurationManagerRegistry in core",
     "AbstractSingletonProxyFactoryBeanConfigurationManagerRegistry", "in core"),
    ("это высокопроизводительный сервер, код RU-1201", "высокопроизводительный", "RU-1201"),
    ("Die Donaudampfschifffahrtsgesellschaftskapitänsmütze liegt hier DE-3302",
     "donaudampfschifffahrtsgesellschaftskapitansmutze", "DE-3302"),
    ("the sha was 3f9a2c1b7e4d and it broke", "3f9a2c1", "it broke"),
    ("image id 9c2e1f0a7b3d pulled", "9c2e1f0a", "pulled"),
    ("test run: ✅ 41 passed, ❌ 2 failed in suite CX-1101", "❌", "CX-1101"),
    ("⚠️ disk nearly full on node-7, ref WN-2202", "⚠", "WN-2202"),
    ("deploy status: 🚀 shipped to prod-eu, ticket PX-4410", "🚀 prod-eu", "PX-4410"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return store_with_lines(tmp_path_factory.mktemp("long"), [fact for fact, _, _ in FACTS], seed=9,
                            turns=60, flood_words=200)


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
@pytest.mark.parametrize("fact,query,value", FACTS, ids=[q[:24] for _, q, _ in FACTS])
def test_a_long_word_or_a_short_id_prefix_finds_its_line(store, mode, fact, query, value):
    hits = store.recall(query, k=3, mode=mode).hits
    assert hits and value in hits[0].text and value in hits[0].snippet


def test_only_words_over_the_tokenizers_limit_are_added_and_spaceless_runs_never_whole():
    terms = exact_terms("высокопроизводительный и короткое слово; 東京クラスタのレプリカ数は17です ok")
    assert terms == ["высокопроизводительный"]
    assert exact_query_terms("высокопроизводительный сервер") == ["высокопроизводительный"]
    assert exact_query_terms("a normal question about servers") == []


def test_each_pictograph_is_a_term_and_a_query_of_one_is_searchable():
    assert exact_terms("⚠️ 3 warnings, ✅ ok ✅") == ["⚠", "✅"]
    assert exact_query_terms("🚀") == ["🚀"]
    assert exact_terms("plain — “quotes” … arrows → ←") == []


def test_short_prefixes_of_hex_ids_but_not_of_plain_numbers():
    assert {"3f9a2c1", "3f9a2c1b", "3f9a2c1b7e"} <= set(exact_terms("sha 3f9a2c1b7e4d"))
    assert "1732801" not in exact_terms("ts=1732801234567")
