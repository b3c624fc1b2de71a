"""Text written without spaces between words (Chinese, Japanese, Korean)
is searchable by any word inside it: each CJK run is indexed and queried
as its overlapping character pairs (reducers/cjk.py)."""
from __future__ import annotations

import pytest

from reducers.cjk import pairs, spaced
from reducers.terms import words
from stores.store import Store
from trace_cli.bench.needles import build_session, flood

FACTS = [  # (what the tool printed, a question naming a word inside the run, the value sought)
    ("東京クラスタのレプリカ数は17です。", "東京クラスタ レプリカ数", "レプリカ数は17"),
    ("上海数据中心的备份密钥存放在保险柜里，编号为KX-4471。", "上海数据中心 备份密钥", "KX-4471"),
    ("부산지사의관리서버는포트48213에서대기합니다", "부산지사 관리서버 포트", "48213"),
]


def test_a_cjk_run_is_its_overlapping_pairs_and_the_rest_is_unchanged():
    assert pairs("東京都") == ["東京", "京都"] and pairs("東") == ["東"]
    assert words("東京クラスタ v2 ready") == ["東京", "京ク", "クラ", "ラス", "スタ", "v2", "ready"]
    assert spaced("plain ascii, unchanged") == "plain ascii, unchanged"
    assert words("Crème-Brûlée") == ["crème", "brûlée"]


def test_a_word_inside_a_cjk_run_finds_the_event(tmp_path):
    import random
    session = build_session(turns=80, needles=0, seed=23)
    rng = random.Random(23)
    for i, (fact, _, _) in enumerate(FACTS):        # each inside a long tool output, mid-way
        session.messages[4 * (10 + 20 * i) + 2]["content"] = f"{flood(rng, 600)}\n{fact}\n{flood(rng, 600)}"
    session.write_openai(tmp_path / "s.jsonl")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "s.jsonl")]))
    for mode in ("fulltext", "hybrid"):
        for fact, query, value in FACTS:
            hits = store.recall(query, k=3, mode=mode).hits
            assert hits and value in hits[0].text and value in hits[0].snippet, (mode, query)


@pytest.mark.parametrize("query", ["東京クラスタのレプリカ数は17です", "レプリカ"])
def test_a_cjk_sentence_or_a_short_word_is_found_too(tmp_path, query):
    session = build_session(turns=20, needles=0, seed=3)
    session.messages[42]["content"] += "\n東京クラスタのレプリカ数は17です。"
    session.write_openai(tmp_path / "s.jsonl")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "s.jsonl")]))
    (hit, *_) = store.recall(query, k=1, mode="fulltext").hits
    assert "レプリカ数は17" in hit.text
