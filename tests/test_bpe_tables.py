"""The query tokenizer's tables cached in SQLite (stores/embedding/bpe_tables.py):
the ids they give are the JSON's, a changed tokenizer file rebuilds them, and
a folder that cannot take the cache still tokenizes."""
from __future__ import annotations

import importlib.util
import os

import pytest

from reducers.bpe import bpe_ids
from stores.embedding.bpe_tables import NAME, bpe_tables

TEXTS = ["which port does payroll-sync listen on?", "Ünïcödé naïve café — “quotes” 🚀 and 漢字",
         "E_PAYROLL_SYNC_4242 at /srv/app/conf/main-123.yaml", "  two  spaces\tand a tab\nnew line", "a", ""]


def _tokenizer_json(tmp_path):
    """A small tokenizer in the JSON shape WordLlama ships (merges as strings and as pairs)."""
    import orjson
    vocab = {"<unk>": 0, "\u2581": 1, "a": 2, "b": 3, "c": 4, "ab": 5, "\u2581a": 6, "abc": 7, "\u2581ab": 8}
    merges = ["a b", ["\u2581", "a"], "ab c", "\u2581a b"]
    path = tmp_path / "tok.json"
    path.write_bytes(orjson.dumps({"model": {"vocab": vocab, "merges": merges}}))
    return path


def test_cached_tables_give_the_ids_the_json_gives(tmp_path):
    tok = _tokenizer_json(tmp_path)
    plain = bpe_tables(tok, None)                         # no cache folder: the JSON's dicts
    assert isinstance(plain[0], dict)
    first = bpe_tables(tok, tmp_path)                     # writes the cache, answers from the JSON
    assert (tmp_path / NAME).exists() and oct((tmp_path / NAME).stat().st_mode & 0o777) == "0o600"
    cached = bpe_tables(tok, tmp_path)                    # a later process: looked up in SQLite
    assert not isinstance(cached[0], dict)
    for text in ["ab abc", "abcab c", "cab", "zz a", ""] + TEXTS:
        assert bpe_ids(text, *cached) == bpe_ids(text, *plain) == bpe_ids(text, *first), text


def test_a_changed_tokenizer_file_rebuilds_the_cache(tmp_path):
    import orjson
    tok = _tokenizer_json(tmp_path)
    bpe_tables(tok, tmp_path)
    data = orjson.loads(tok.read_bytes())
    data["model"]["merges"] = ["b c", "a b"]                 # other ranks: other tokens
    data["model"]["vocab"]["bc"] = 9
    tok.write_bytes(orjson.dumps(data))
    os.utime(tok, ns=(1, 1))
    fresh = bpe_tables(tok, tmp_path)
    assert isinstance(fresh[0], dict)                      # the stale cache was not used...
    assert bpe_ids("abc", *bpe_tables(tok, tmp_path)) == bpe_ids("abc", *fresh) == [1, 2, 9]   # ...and was rebuilt


def test_a_damaged_cache_or_a_missing_folder_still_tokenizes(tmp_path):
    tok = _tokenizer_json(tmp_path)
    (tmp_path / NAME).write_bytes(b"not a database")
    assert bpe_ids("abc", *bpe_tables(tok, tmp_path)) == [1, 7]
    assert bpe_ids("abc", *bpe_tables(tok, tmp_path)) == [1, 7]          # rebuilt over the damaged file
    assert bpe_ids("abc", *bpe_tables(tok, tmp_path / "absent")) == [1, 7]
    assert not (tmp_path / "absent").exists()


def test_wordllama_query_vectors_are_the_same_with_the_cache(tmp_path):
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("wordllama not installed")
    import numpy as np

    from stores.embedders import WordLlamaEmbedder
    plain = WordLlamaEmbedder(128)
    WordLlamaEmbedder(128, tmp_path).embed_query("build the cache")
    cached = WordLlamaEmbedder(128, tmp_path)
    for text in TEXTS:
        assert np.array_equal(cached.embed_query(text), plain.embed_query(text)), text
    assert not isinstance(cached._bpe[0], dict)
