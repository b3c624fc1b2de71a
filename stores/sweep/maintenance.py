"""`trace sweep revert ID` and `trace sweep --repair`: changing the ledger
outside a sweep, under the sweep's lock, committed like a sweep.

A revert undoes one decision — a fact's latest ADD, UPDATE, SUPERSEDE or
DELETE, or a TUNE — and is itself a ledger row (REVERT, naming the row it
undoes). Repair rebuilds a damaged ledger from its valid rows (the bad
lines are kept in quarantine/) and the facts of a damaged knowledge file
from the ledger's latest decision per key."""
from __future__ import annotations

from datetime import datetime, timezone

from reducers.fact_reconcile import Fact, Knowledge, RevertError, revert
from stores.errors import TraceError
from stores.sweep.files import KNOWLEDGE, LEDGER, LOCK, TUNING, Commit, jsonl, recover
from stores.sweep.knowledge_file import knowledge_lines, read_knowledge, valid_knowledge
from stores.sweep.ledger_file import compact, quarantine_bad_lines, read_ledger, row_key, valid_ledger
from stores.sweep.tuning import read_tuning, revert_tune, tuning_bytes


def revert_decision(store, ledger_id: str, *, wait: float = 0.0) -> dict:
    """Undo one decision; returns the REVERT row. TraceError (exit 1) for an
    unknown id or a decision that cannot be undone as it stands."""
    from stores.log.lock import WriterLock
    store.require()
    lock = WriterLock(store.dir, LOCK, "a sweep").acquire(wait)
    try:
        recover(store.dir)
        rows = valid_ledger(store.dir)
        target = next((r for r in rows if r.get("id") == ledger_id), None)
        if target is None:
            raise TraceError(f"no ledger row {ledger_id!r} (the ledger keeps each key's latest decision and its "
                             f"newest rows; list them with `trace sweep ledger`)")
        ts = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        commit = Commit(store.dir)
        try:
            if target.get("action") == "TUNE":
                tuning = read_tuning(store.dir)
                row = _tune_revert_row(target, ts)
                revert_tune(tuning, target, row["id"])
                commit.stage(TUNING, [tuning_bytes(tuning)])
            else:
                knowledge = valid_knowledge(store.dir)
                row = revert(knowledge, target, ts)
                commit.stage(KNOWLEDGE, knowledge_lines(knowledge))
        except RevertError as exc:
            raise TraceError(str(exc)) from None
        commit.stage(LEDGER, jsonl(compact(rows + [row])))
        commit.commit()
        return row
    finally:
        lock.release()


def _tune_revert_row(target: dict, ts: str) -> dict:
    from reducers.fact_reconcile import row_id
    return {"id": row_id("REVERT", target["id"], ts), "action": "REVERT", "reverts": target["id"],
            "key": target["key"], "type": "tuning", "old": target.get("new"), "new": target.get("old"),
            "target_ids": [], "target_seqs": [], "source_ids": [], "source_seqs": [], "session_id": None,
            "reason": f"revert of TUNE {target['id']}", "reconciler": "reflection", "version": 1, "ts": ts}


def repair(store, *, wait: float = 0.0) -> dict:
    """Rebuild a damaged ledger (and knowledge file); reports what it did."""
    from stores.log.lock import WriterLock
    store.require()
    lock = WriterLock(store.dir, LOCK, "a sweep").acquire(wait)
    try:
        recover(store.dir)
        rows, bad = read_ledger(store.dir)
        knowledge, bad_facts = read_knowledge(store.dir)
        report = {"ledger_rows": len(rows), "bad_ledger_lines": [b.line for b in bad],
                  "bad_fact_lines": [b.line for b in bad_facts], "quarantined": None, "facts_rebuilt": 0}
        if not bad and not bad_facts:
            return report
        quarantined = quarantine_bad_lines(store.dir, bad + bad_facts)
        report["quarantined"] = str(quarantined)
        commit = Commit(store.dir)
        if bad:
            commit.stage(LEDGER, jsonl(compact(rows)))
        if bad_facts:
            report["facts_rebuilt"] = _restore_facts(knowledge, rows)
            commit.stage(KNOWLEDGE, knowledge_lines(knowledge))
        commit.commit()
        return report
    finally:
        lock.release()


def _restore_facts(knowledge: Knowledge, rows: list[dict]) -> int:
    """Facts the knowledge file lost, from each key's latest decision."""
    latest: dict[str, dict] = {}
    for row in rows:
        if row.get("action") in ("ADD", "UPDATE", "SUPERSEDE", "DELETE", "REVERT") and row.get("type") != "tuning":
            latest[row_key(row)] = row
    restored = 0
    for key, row in latest.items():
        if key in knowledge.facts:
            continue
        deleted = row["action"] == "DELETE"
        value = row.get("old") if deleted else row.get("new")
        if value is None:
            continue                          # an ADD reverted: nothing to restore
        sources = [{"id": i, "seq": s, "session_id": row.get("session_id"), "ts": row.get("ts")}
                   for i, s in zip(row.get("source_ids") or (), row.get("source_seqs") or ())]
        knowledge.set(Fact(key=key, label=key, type=row.get("type") or "config", value=str(value),
                           importance=float(row.get("importance") or 0.5), status="deleted" if deleted else "live",
                           since=row.get("ts"), sources=sources, ledger_id=row["id"], rule=row.get("rule") or ""))
        restored += 1
    return restored
