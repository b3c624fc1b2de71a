"""`trace sweep`: the nightly consolidation, and its ledger."""
from __future__ import annotations

from typing import Annotated

import typer

from trace_cli.options import JsonOpt, WaitOpt

sweep_app = typer.Typer(
    help=("Consolidate what was logged since the last sweep: extract facts (decisions, settings, "
          "preferences, architecture, implementation, issues, tasks, what the user says about themselves) "
          "with rules — no model, no spend — "
          "reconcile them into the ledger (ADD, UPDATE/SUPERSEDE, DELETE only with --allow-delete, NONE), "
          "find episodes, and reflect on weak recalls. The log is never modified. One sweep runs at a "
          "time (exit 4; --wait). Killed at any point, the next run finishes or redoes it exactly.\n\n"
          "Examples:\n\n"
          "  trace sweep --dry-run | head\n\n"
          "  30 3 * * *  /path/to/trace/.venv/bin/trace sweep --wait 600 && "
          "/path/to/trace/.venv/bin/trace digest --out ~/notes/memory.md\n\n"
          "  trace sweep revert L3f9a0c1d2e4b"),
    invoke_without_command=True)


@sweep_app.callback()
def sweep(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the decisions (JSON Lines); write nothing.")] = False,
    allow_delete: Annotated[bool, typer.Option(
        "--allow-delete", help="Tombstone a fact when its source explicitly removes it (an env line deleted, a "
                               "package uninstalled, an entity cancelled); off, such a removal is a NONE.")] = False,
    llm_cmd: Annotated[str | None, typer.Option(
        "--llm-cmd", metavar="CMD", help="Also extract facts from messages with this command: prompt on stdin, "
                                         "JSON out. Any failure falls back to the rules for that batch; a command "
                                         "missing or failing 3 batches in a row is not run again in this sweep.")] = None,
    llm_budget: Annotated[int | None, typer.Option(
        "--llm-budget", metavar="TOKENS", min=1, help="Tokens (prompt + answer) --llm-cmd may use in this run.")] = None,
    llm_timeout: Annotated[float, typer.Option("--llm-timeout", metavar="SECONDS", min=1,
                                               help="Seconds one --llm-cmd call may take.")] = 120.0,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Rebuild a damaged ledger from its valid rows (bad lines kept in quarantine/), and "
                         "damaged facts from the ledger; then sweep.")] = False,
    wait: WaitOpt = 0.0,
    json_out: JsonOpt = False,
) -> int:
    if ctx.invoked_subcommand is not None:
        return 0
    from stores.errors import UsageError
    from stores.sweep import repair as repair_ledger
    from trace_cli.app_state import opened
    from trace_cli.progress import SweepProgress

    out, store = opened(ctx, json_out)
    if llm_budget is not None and not llm_cmd:
        raise UsageError("--llm-budget limits --llm-cmd; give the command too")
    model = None
    if llm_cmd:
        from stores.sweep.llm import ModelExtractor
        model = ModelExtractor(llm_cmd, budget=llm_budget, timeout=llm_timeout, warn=out.warn)
    if repair:
        fixed = repair_ledger(store, wait=wait)
        if fixed["bad_ledger_lines"] or fixed["bad_fact_lines"]:
            out.note(f"repaired: dropped ledger line(s) {fixed['bad_ledger_lines'] or '-'} and fact line(s) "
                     f"{fixed['bad_fact_lines'] or '-'} (kept in {fixed['quarantined']}); "
                     f"{fixed['facts_rebuilt']} fact(s) rebuilt from the ledger")
        else:
            out.note("the ledger and the facts are sound: nothing to repair")
    rows = []
    # -q (cron): the decisions are in the ledger; print nothing unless --dry-run asked to see them
    silent = out.quiet and not dry_run
    emit = (lambda row: None) if silent else out.emit if out.json else rows.append
    with SweepProgress(out) as progress:
        report = store.sweep(dry_run=dry_run, wait=wait, allow_delete=allow_delete, model=model,
                           on_decision=emit, on_progress=progress.update)
    summary = report.to_dict()
    if silent:
        return 0
    if out.json:
        out.emit({"sweep": summary})
    else:
        _print_summary(out, summary, rows)
    return 0


def _print_summary(out, summary: dict, rows: list[dict]) -> None:
    changed = [r for r in rows if r["action"] != "NONE"]
    if changed:
        out.table(["id", "action", "key", "old", "new", "source", "reason"],
                  ([r["id"], r["action"], r["key"], _short(r.get("old")), _short(r.get("new")),
                    ",".join(str(s) for s in r.get("source_seqs") or ()), r["reason"]] for r in changed[-50:]),
                  title=f"decisions ({len(changed)} changing, latest 50; --json for all)")
    verb = "would decide" if summary["dry_run"] else "decided"
    counts = ", ".join(f"{n} {a}" for a, n in summary["decisions"].items()) or "nothing new"
    span = (f"events {summary['from_seq']}..{summary['to_seq']} ({summary['events']} events)" if summary["events"]
            else "no new events")
    out.console.print(f"swept {span} in "
                      f"{summary['seconds']} s: {verb} {counts}; {summary['facts_live']} live facts, "
                      f"{summary['episodes_closed']} episodes closed, {summary['episodes_open']} open", markup=False)
    refl = summary["reflection"]
    if refl["recalls"]:
        out.console.print(f"reflection: {refl['weak_total']} of {refl['recalls']} recalls were weak or empty; "
                          f"{refl['tuned']} term boost(s) changed", markup=False)
        for w in refl["weak"][:10]:
            out.console.print(f"  {w['reason']:5}  {w['query'][:100]}", markup=False)
    if summary["llm"]:
        m = summary["llm"]
        out.console.print(f"model: {m['calls']} call(s), {m['tokens']} tokens"
                          + (f" of {m['budget']}" if m["budget"] else "") + f", {m['fallbacks']} fallback(s)",
                          markup=False)


def _short(value) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= 60 else text[:59] + "…"


@sweep_app.command("revert", help=(
    "Undo one decision by its ledger id: a fact's latest ADD, UPDATE, SUPERSEDE or DELETE, or a TUNE. "
    "The undo is itself a ledger row (REVERT). Exit 1 for an unknown id.\n\n"
    "Example:  trace sweep revert L3f9a0c1d2e4b"))
def revert(
    ctx: typer.Context,
    ledger_id: Annotated[str, typer.Argument(metavar="LEDGER_ID", help="The decision's id (`trace sweep ledger`).")],
    wait: WaitOpt = 0.0,
    json_out: JsonOpt = False,
) -> int:
    from trace_cli.app_state import opened

    out, store = opened(ctx, json_out)
    row = store.revert(ledger_id, wait=wait).row
    if out.json:
        out.emit(row)
    else:
        out.console.print(f"{row['id']}: reverted {row['reverts']} ({row['key']}: {_short(row['old'])} → "
                          f"{_short(row['new'])})", markup=False)
    return 0


@sweep_app.command("ledger", help="The ledger's decisions, oldest first (one key's with --key).")
def ledger(
    ctx: typer.Context,
    key: Annotated[str | None, typer.Option("--key", "-k", metavar="KEY",
                                                    help="Only this fact key (as stored, or as the digest shows "
                                                         "it: DATABASE_URL finds 'database url').")] = None,
    changes: Annotated[bool, typer.Option("--changes", help="Leave out NONE decisions.")] = False,
    json_out: JsonOpt = False,
) -> int:
    from stores.sweep import NOT_SWEPT
    from trace_cli.app_state import opened

    out, store = opened(ctx, json_out, must_exist=True)
    result = store.ledger(key, changes=changes)
    rows, done = result.rows, result.swept
    if not done:
        out.note(NOT_SWEPT)
    if not rows and done:              # found nothing: said on stderr, exit 3 (a script can tell)
        which = " ".join(w for w in (f"for key {key!r}" if key else "", "that change a fact" if changes else "") if w)
        out.note(f"no ledger rows{' ' + which if which else ''}"
                 f"{' (`trace sweep ledger` lists every key)' if key else ''}")
        return 3
    if out.json:
        out.emit_many(rows)
    else:
        out.table(["id", "action", "key", "old", "new", "source", "ts"],
                  ([r.get("id"), r.get("action"), r.get("key"), _short(r.get("old")), _short(r.get("new")),
                    ",".join(str(s) for s in r.get("source_seqs") or ()), r.get("ts")] for r in rows),
                  title=f"{len(rows)} ledger row(s)")
    return 0


@sweep_app.command("facts", help="The facts the last sweep left: live ones, most important first.")
def facts_(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Tombstoned facts too.")] = False,
    json_out: JsonOpt = False,
) -> int:
    from stores.sweep import NOT_SWEPT
    from trace_cli.app_state import opened

    out, store = opened(ctx, json_out, must_exist=True)
    result = store.facts(include_deleted=all_)
    rows, done = result.facts, result.swept
    if not done:
        out.note(NOT_SWEPT)
    if not rows and done:              # found nothing: said on stderr, exit 3 (a script can tell)
        out.note("the sweeps found no facts" + ("" if all_ else " that are live (--all shows tombstoned ones too)"))
        return 3
    if out.json:
        out.emit_many(rows)
    else:
        out.table(["key", "type", "value", "importance", "status", "sources"],
                  ([r["key"], r["type"], _short(r["value"]), r["importance"], r["status"],
                    ",".join(str(s.get("seq")) for s in r["sources"])] for r in rows),
                  title=f"{len(rows)} fact(s)")
    return 0
