"""What recall demotes: events whose facts the ledger superseded or
tombstoned. The log itself is never touched; recall ranks such events
lower and still finds them.

Two sources, merged:
- the facts the sweep keeps (knowledge.jsonl): the events behind a value a
  later one replaced are superseded, those behind a deleted fact are
  tombstoned — by fact key, and as reverts left them (a reverted UPDATE
  gives the old value back, so its events are no longer superseded);
- ledger rows without a fact key that name their target events directly
  (`{"action": "UPDATE" | "DELETE", "target_seq": …}`, written by hand or
  by other tools), unless a REVERT row undoes them. The sweep's own rows
  are keyed: the facts above already say what they left standing."""
from __future__ import annotations

from pathlib import Path

_DEMOTING = {"UPDATE": "UPDATE", "SUPERSEDE": "UPDATE", "DELETE": "DELETE"}


def ledger_marks(store: Path) -> dict[int, str]:
    """target seq -> "UPDATE" | "DELETE" (the latest decision wins)."""
    from stores.sweep.files import KNOWLEDGE, LEDGER
    if not (store / LEDGER).exists() and not (store / KNOWLEDGE).exists():
        return {}                  # no sweep yet: a cold recall skips loading the fact reconciler (~10 ms)
    from reducers.fact_reconcile import demotions
    from stores.sweep.files import read_jsonl
    from stores.sweep.knowledge_file import read_knowledge
    rows = list(read_jsonl(store / "ledger.jsonl"))
    reverted = {r.get("reverts") for r in rows if r.get("action") == "REVERT"}
    marks: dict[int, str] = {}
    for row in rows:
        mark = _DEMOTING.get(row.get("action"))
        if mark is None or "key" in row or (row.get("id") is not None and row.get("id") in reverted):
            continue
        seqs = row.get("target_seqs") if isinstance(row.get("target_seqs"), list) else [row.get("target_seq")]
        for seq in seqs:
            if isinstance(seq, int):
                marks[seq] = mark
    knowledge, _ = read_knowledge(store)
    marks.update(demotions(knowledge))
    return marks
