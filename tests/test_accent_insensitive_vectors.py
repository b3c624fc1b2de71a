"""The vector side matches across accents as full text does: a query typed
"creme brulee" or "Senor Garcia" meets "crème brûlée" and "Señor García"
with the same vector. The embedder reads each text with its accents folded
and its case kept (reducers/folding.py `unaccented`), and a vector index
built before (schema 2) is rebuilt from the log with a note saying why."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from reducers.folding import unaccented
from tests.helpers import cli


def test_unaccented_folds_like_full_text_but_keeps_case():
    assert unaccented("Crème Brûlée") == "Creme Brulee"
    assert unaccented("Señor García, STRAẞE, Æsir, Łódź") == "Senor Garcia, STRASSE, Aesir, Lodz"
    assert unaccented("cafe\u0301 ok") == "cafe ok"
    text = "plain ascii stays the same object"
    assert unaccented(text) is text


@pytest.mark.parametrize("embedder", ["wordllama", "hash"])
def test_a_query_without_accents_has_the_vector_of_the_text_with_them(embedder):
    if embedder == "wordllama" and importlib.util.find_spec("wordllama") is None:
        pytest.skip("wordllama not installed")
    from stores.index.embedders import load_embedder
    emb = load_embedder(embedder)
    for typed, written in [("creme brulee for dinner", "crème brûlée for dinner"),
                           ("Senor Garcia approved it", "Señor García approved it"),
                           ("the Zurich office", "the Zürich office")]:
        query = emb.embed_query(typed)
        (text,) = emb.embed([written])
        assert float(query @ text) > 0.999, (typed, written)
    # case still tells words apart: folding is not lowercasing
    (upper, lower) = emb.embed(["Zurich", "zurich"])
    assert embedder == "hash" or float(upper @ lower) < 0.999


def test_a_vector_index_of_an_older_schema_is_rebuilt_with_a_note(tmp_path, trace_home, monkeypatch):
    import stores.index.vectors
    built = stores.index.vectors.SCHEMA_VERSION
    assert built >= 3                                            # 3: texts embedded unaccented
    conv = tmp_path / "c.jsonl"
    conv.write_text("\n".join(json.dumps({"messages": [
        {"role": "user", "content": "where did we meet last week"},
        {"role": "assistant", "content": f"We met at the café on Rue Cler, table {i}; Señor García paid."}]})
        for i in range(3)) + "\n")
    assert cli("ingest", str(conv)).code == 0
    assert cli("recall", "cafe", "--mode", "hybrid").code == 0
    meta_path = trace_home / "vectors" / "meta.json"
    assert json.loads(meta_path.read_text())["schema"] == built
    monkeypatch.setattr(stores.index.vectors, "SCHEMA_VERSION", built + 1)      # this TRACE builds a newer one
    run = cli("recall", "Senor Garcia", "--mode", "hybrid", "--json")
    assert run.code == 0, run.err
    assert (f"vector index of an older TRACE (schema {built}, this one builds {built + 1}): rebuilding it from the log"
            in run.err)
    assert json.loads(meta_path.read_text())["schema"] == built + 1
    top = json.loads(run.out.splitlines()[0])
    assert "García" in top["text"]
