"""`ledger.jsonl`: one decision per line, read whole and rewritten whole.

The ledger keeps the latest state-changing decision per key (what a
revert needs, and what says why a fact is as it is) plus the newest
TAIL_ROWS rows of any kind, in their original order — so it stays bounded
however many nights the sweep runs (paper 9.5). Rows written before the
sweep existed (`{"action", "target_seq", …}` without a key) count as keyed
by their target seq.

A line that does not parse, or is not a decision, is damage: the sweep
reports it with its line number and writes nothing until `trace sweep
--repair` rebuilds the ledger from the valid rows (the bad lines go to
quarantine/, never dropped)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import orjson

from stores.errors import IntegrityError
from stores.paths import ensure_dir
from stores.sweep.files import LEDGER

TAIL_ROWS = 5000
ACTIONS = ("ADD", "UPDATE", "SUPERSEDE", "DELETE", "NONE", "REVERT", "TUNE")
KEYED_ACTIONS = ("ADD", "UPDATE", "SUPERSEDE", "DELETE", "REVERT", "TUNE")     # change what a key holds


@dataclass
class BadLine:
    line: int
    reason: str
    data: bytes


def row_key(row: dict) -> str:
    key = row.get("key")
    return key if isinstance(key, str) else f"seq:{row.get('target_seq')}"


def read_ledger(store: Path) -> tuple[list[dict], list[BadLine]]:
    rows: list[dict] = []
    bad: list[BadLine] = []
    try:
        f = open(store / LEDGER, "rb")
    except FileNotFoundError:
        return rows, bad
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if not line.endswith(b"\n"):
                bad.append(BadLine(n, "no trailing newline (a torn write)", line))
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                bad.append(BadLine(n, f"not JSON ({str(exc).split(':')[0]})", line))
                continue
            if not isinstance(row, dict) or row.get("action") not in ACTIONS:
                bad.append(BadLine(n, "not a ledger row (no known action)", line))
                continue
            rows.append(row)
    return rows, bad


def valid_ledger(store: Path) -> list[dict]:
    """The rows, or IntegrityError naming the first damaged line."""
    rows, bad = read_ledger(store)
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise IntegrityError(f"{store / LEDGER}:{bad[0].line}: {bad[0].reason}{more}; the sweep writes nothing "
                             f"until `trace sweep --repair` rebuilds the ledger from its valid rows")
    return rows


def compact(rows: list[dict], tail: int = TAIL_ROWS) -> list[dict]:
    """The latest state-changing row per key plus the last `tail` rows, in order."""
    latest: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row.get("action") in KEYED_ACTIONS or "key" not in row:
            latest[row_key(row)] = i
    keep = set(latest.values()) | set(range(max(0, len(rows) - tail), len(rows)))
    return [row for i, row in enumerate(rows) if i in keep]


def quarantine_bad_lines(store: Path, bad: list[BadLine]) -> Path | None:
    """Keep the damaged lines (lossless) before the ledger is rebuilt without them."""
    if not bad:
        return None
    qdir = ensure_dir(store / "quarantine")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = qdir / f"ledger-{stamp}.bad"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for b in bad:
            os.write(fd, f"# line {b.line}: {b.reason}\n".encode() + b.data.rstrip(b"\n") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return path
