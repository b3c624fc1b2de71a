"""The ledger (`ledger.jsonl`): logical corrections beside the log.

Rows: {"action": "UPDATE" | "DELETE", "target_seq": int, "target_id": str,
"by_seq": int | null, "reason": str, "ts": str}. UPDATE marks a fact
superseded (by a newer event), DELETE tombstones it. The log itself is
never touched; recall reads the ledger to rank such facts lower. The
nightly sweep writes it (see the sweep issue); here it is only read."""
from __future__ import annotations

from pathlib import Path

import orjson


def ledger_marks(store: Path) -> dict[int, str]:
    """target seq -> "UPDATE" | "DELETE" (the latest decision wins)."""
    path = store / "ledger.jsonl"
    marks: dict[int, str] = {}
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return marks
    with f:
        for line in f:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict) and isinstance(row.get("target_seq"), int) and row.get("action") in ("UPDATE", "DELETE"):
                marks[row["target_seq"]] = row["action"]
    return marks
