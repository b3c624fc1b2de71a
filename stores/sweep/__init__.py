"""The nightly sweep (paper 8, Annex A.3): facts, the reconciliation
ledger, episodes and reflection, beside a log it never modifies.

    from stores.sweep import run_sweep, revert_decision, repair, facts, ledger_rows, episodes
    report = run_sweep(store)                  # decisions since the last sweep
    revert_decision(store, "L3f9a…")           # undo one (a REVERT row)
    facts(store)                               # live facts, most important first

See stores/sweep/runner.py for the steps and stores/sweep/files.py for
the files and how a sweep commits them."""
from __future__ import annotations

from stores.sweep.files import EPISODES, KNOWLEDGE, LEDGER, STATE, read_jsonl

__all__ = ["run_sweep", "SweepReport", "revert_decision", "repair", "facts", "ledger_rows", "episodes", "swept"]
_LAZY = {"run_sweep": "runner", "SweepReport": "runner", "revert_decision": "maintenance", "repair": "maintenance",
         "facts": "knowledge_file"}


def __getattr__(name: str):
    # Recall reads tuning.json through this package on every cold start: the
    # sweep's own modules (and the extractor's regexes) load only when used.
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f"stores.sweep.{_LAZY[name]}"), name)
    raise AttributeError(name)


def ledger_rows(store, key: str | None = None) -> list[dict]:
    """The ledger's rows, oldest first (one key's when given, spelled as
    stored or as the digest shows it: `DATABASE_URL` finds "database url");
    a damaged ledger is IntegrityError naming the line (exit 5), never rows
    left out."""
    from stores.sweep.ledger_file import valid_ledger
    rows = valid_ledger(store.dir)
    if key is None:
        return rows
    from reducers.fact_keys import norm_key
    wanted = {key, norm_key(key)}
    return [r for r in rows if r.get("key") in wanted]


def episodes(store, session: str | None = None) -> list[dict]:
    """Episodes the last sweep found (one session's when given), in log order."""
    out = [row for row in read_jsonl(store.dir / EPISODES) if session is None or row.get("session_id") == session]
    out.sort(key=lambda r: r.get("start_seq") or 0)
    return out


def swept(store) -> bool:
    """Whether a sweep has ever committed here (facts, ledger and digest
    are empty until one has, which is worth saying)."""
    return any((store.dir / name).exists() for name in (STATE, LEDGER, KNOWLEDGE))


NOT_SWEPT = "no sweep has run on this store yet: `trace sweep` finds its facts (nightly from cron: `trace cron`)"
