"""What a store holds on disk, by part: the log (segments/), the full-text
index, the vector index, the dedupe state (state.db) and the rest
(artifacts, anatomy, ledger, caches). Sizes from stat, in bytes."""
from __future__ import annotations

import os
from pathlib import Path

PARTS = ("segments", "fulltext", "vectors", "state.db")


def _bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:                # a file removed while we walk (a merge)
                pass
    return total


def footprint(store_dir: str | Path) -> dict[str, int]:
    store_dir = Path(store_dir)
    out = {part: _bytes(store_dir / part) if (store_dir / part).exists() else 0 for part in PARTS}
    out["other"] = _bytes(store_dir) - sum(out.values())
    return out
