"""What `Store.recall` returns (and `trace recall` prints)."""
from __future__ import annotations

from dataclasses import dataclass, field

from stores.api.result import Listing


@dataclass
class RecallResult(Listing):
    """Hits for one query, best first; `vector_lag` counts events the
    vector index had not reached (their vector score is missing)."""
    items = "hits"
    query: str
    hits: list = field(default_factory=list)            # stores.recall.Hit
    vector_lag: int = 0
    warnings: list[str] = field(default_factory=list)   # a filter that cannot match, a mode that fell back
    asked: object = field(default=None, repr=False)      # the stores.recall.RecallQuery answered (session resolved)

    def hit_dicts(self) -> list[dict]:
        """One dict per hit: what `trace recall` prints, one JSON line each."""
        lag = {"vector_lag": self.vector_lag} if self.vector_lag else {}
        return [{**h.as_json(), **lag} for h in self.hits]

    def block(self, budget: int) -> str:
        """The hits as a <recalled-context> block of at most `budget` tokens."""
        return self.packed_block(budget)[0]

    def packed_block(self, budget: int) -> tuple[str, list[dict]]:
        """(the block, the hits it holds as `hit_dicts` gives them)."""
        from reducers.recall_block import packed_block
        return packed_block(self.hit_dicts(), budget)

    def to_dict(self) -> dict:
        return {"query": self.query, "hits": self.hit_dicts(), "vector_lag": self.vector_lag,
                "warnings": self.warnings}
