"""`tuning.json` and reading the retrieval log: the reflection half of the
sweep (reducers/reflection.py decides; this reads and writes).

tuning.json: {"version": 1, "term_boosts": {term: boost}, "rows": {term:
the TUNE ledger row that set it}}. Recall reads `term_boosts` (through
`load_boosts`) and multiplies the scores of events holding a boosted term.
Every change is a TUNE row in the ledger, so `trace sweep revert` undoes
it like any decision."""
from __future__ import annotations

from pathlib import Path

import orjson

from reducers.reflection import WeakQuery, tune, weak_queries
from stores.sweep.files import TUNING

RETRIEVALS = "retrievals.jsonl"
MAX_READ = 64 << 20            # a night's recalls read at most (the rest waits for the next sweep)


def read_tuning(store: Path) -> dict:
    try:
        data = orjson.loads((store / TUNING).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {"version": 1, "term_boosts": {}, "rows": {}}
    if not isinstance(data, dict) or not isinstance(data.get("term_boosts"), dict):
        return {"version": 1, "term_boosts": {}, "rows": {}}
    data.setdefault("rows", {})
    return data


def load_boosts(store: Path) -> dict[str, float]:
    """What recall applies: term -> boost (empty when there is no tuning)."""
    boosts = read_tuning(store).get("term_boosts") or {}
    return {t: float(b) for t, b in boosts.items() if isinstance(b, (int, float)) and b > 0}


def tuning_bytes(tuning: dict) -> bytes:
    return orjson.dumps(tuning, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def read_retrievals(store: Path, offset: int) -> tuple[list[dict], int]:
    """Recall rows appended since `offset` (from the start when the file is
    shorter than that: rotated or truncated), and the offset to resume at.
    A line still being written (no newline yet) waits for the next sweep."""
    path = store / RETRIEVALS
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return [], 0
    if size < offset:
        offset = 0
    rows = []
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(min(size - offset, MAX_READ))
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows, offset + end


def reflect(rows: list[dict], tuning: dict, doc_freq) -> tuple[list[WeakQuery], int, list[dict]]:
    """(weak queries, recalls read, TUNE rows); `tuning` is updated in place."""
    from reducers.fact_reconcile import row_id
    weak, seen = weak_queries(rows)
    boosts = tuning["term_boosts"]
    ts = next((r.get("ts") for r in reversed(rows) if r.get("ts")), None)
    decisions = []
    for term, old, new, queries in tune(weak, doc_freq, boosts):
        row = {"id": row_id("TUNE", term, old, new, ts), "action": "TUNE", "key": f"tuning: {term}",
               "type": "tuning", "old": old, "new": new, "target_ids": [], "target_seqs": [], "source_ids": [],
               "source_seqs": [], "session_id": None,
               "reason": (f"in {queries} weak or empty recalls since the last sweep" if new is not None
                          else "the boost table is full: the weakest boost goes"),
               "reconciler": "reflection", "version": 1, "ts": ts}
        if new is None:
            boosts.pop(term, None)
            tuning["rows"].pop(term, None)
        else:
            boosts[term] = new
            tuning["rows"][term] = row["id"]
        decisions.append(row)
    return weak, seen, decisions


def revert_tune(tuning: dict, row: dict, revert_row_id: str) -> None:
    """Undo a TUNE row (only the latest for its term)."""
    term = row["key"].split(": ", 1)[1]
    if tuning["rows"].get(term) != row["id"] and not (row.get("new") is None and term not in tuning["rows"]):
        from reducers.fact_reconcile import RevertError
        raise RevertError(f"ledger row {row['id']} is not the latest tuning of {term!r}; revert the latest first")
    if row.get("old") is None:
        tuning["term_boosts"].pop(term, None)
        tuning["rows"].pop(term, None)
    else:
        tuning["term_boosts"][term] = row["old"]
        tuning["rows"][term] = revert_row_id
