"""WordLlama's query tokenizer tables cached as flat rank tables
(stores/tokenizer/wordllama_tables.py): the ids they give are the JSON's, a
changed tokenizer file gets new tables, and damaged or unwritable files
still tokenize."""
from __future__ import annotations

import importlib.util
import os

import orjson
import pytest

from reducers.bpe import bpe_ids
from stores.tokenizer.wordllama_tables import bpe_tables

TEXTS = ["which port does payroll-sync listen on?", "Ünïcödé naïve café — “quotes” 🚀 and 漢字",
         "E_PAYROLL_SYNC_4242 at /srv/app/conf/main-123.yaml", "  two  spaces\tand a tab\nnew line", "a", ""]


def _tokenizer_json(tmp_path):
    """A small tokenizer in the JSON shape WordLlama ships (merges as strings and as pairs)."""
    vocab = {"<unk>": 0, "\u2581": 1, "a": 2, "b": 3, "c": 4, "ab": 5, "\u2581a": 6, "abc": 7, "\u2581ab": 8, "é": 9}
    merges = ["a b", ["\u2581", "a"], "ab c", "\u2581a b"]
    path = tmp_path / "tok.json"
    path.write_bytes(orjson.dumps({"model": {"vocab": vocab, "merges": merges}}))
    return path


def test_cached_tables_give_the_ids_the_json_gives(tmp_path):
    tok, cache = _tokenizer_json(tmp_path), tmp_path / "cache"
    first = bpe_tables(tok, cache)                        # from the JSON; the tables are written
    assert isinstance(first[0], dict) and len(list(cache.iterdir())) == 2
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in cache.iterdir())
    cached = bpe_tables(tok, cache)                       # a later process: looked up where they lie
    assert not isinstance(cached[0], dict)
    for text in ["ab abc", "abcab c", "cab", "zz a", "é aé"] + TEXTS:
        assert bpe_ids(text, *cached) == bpe_ids(text, *first), text
    assert bpe_ids("abc", *cached) == [1, 7]


def test_a_changed_tokenizer_file_gets_new_tables(tmp_path):
    tok, cache = _tokenizer_json(tmp_path), tmp_path / "cache"
    bpe_tables(tok, cache)
    data = orjson.loads(tok.read_bytes())
    data["model"]["merges"] = ["b c", "a b"]                 # other ranks: other tokens
    data["model"]["vocab"] = {**data["model"]["vocab"], "bc": 10}
    tok.write_bytes(orjson.dumps(data))
    os.utime(tok, ns=(1, 1))
    fresh = bpe_tables(tok, cache)
    assert isinstance(fresh[0], dict)                      # not the old tables...
    assert bpe_ids("abc", *bpe_tables(tok, cache)) == bpe_ids("abc", *fresh) == [1, 2, 10]   # ...new ones


def test_damaged_or_unwritable_tables_still_tokenize(tmp_path):
    tok, cache = _tokenizer_json(tmp_path), tmp_path / "cache"
    bpe_tables(tok, cache)
    for path in cache.iterdir():
        path.write_bytes(path.read_bytes()[:-3] + b"xyz")     # a flipped tail: its checksum no longer holds
    assert isinstance(bpe_tables(tok, cache)[0], dict)
    assert bpe_ids("abc", *bpe_tables(tok, cache)) == [1, 7]   # rewritten whole
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would go")
    assert bpe_ids("abc", *bpe_tables(tok, blocked / "cache")) == [1, 7]


def test_wordllama_query_vectors_are_the_same_with_the_cache(tmp_path, monkeypatch):
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("wordllama not installed")
    import numpy as np

    from stores.index.embedders import WordLlamaEmbedder
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = WordLlamaEmbedder(128)
    first.embed_query("build the cache")
    assert isinstance(first._bpe[0], dict)
    cached = WordLlamaEmbedder(128)
    for text in TEXTS:
        assert np.array_equal(cached.embed_query(text), first.embed_query(text)), text
    assert not isinstance(cached._bpe[0], dict)
