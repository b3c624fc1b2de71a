"""Every command is a thin wrapper over a `Store` method (README, "Python
API"): walking the CLI's whole command tree, each command names its
method, the method exists with a docstring, and the commands added last
(sweep facts/ledger/revert, anatomy record/diff) print exactly what their
methods return. Exempt commands say why."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer

from stores.api.results import DiffResult, FactList, LedgerRows, Reverted
from stores.store import Store
from tests.helpers import cli
from trace_cli.app import full_app

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
SESSION = "5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"

METHODS = {
    "ingest": "ingest", "recall": "recall", "compact": "compact", "context": "context", "show": "show",
    "export": "export", "stats": "stats", "sessions": "sessions", "index": "index", "reindex": "reindex",
    "verify": "verify", "digest": "digest", "sweep": "sweep", "sweep facts": "facts", "sweep ledger": "ledger",
    "sweep revert": "revert", "note add": "add_note", "note list": "notes", "state show": "state",
    "anatomy record": "record_calls", "anatomy replay": "replay", "anatomy diff": "diff",
}
EXEMPT = {
    "cron": "prints crontab lines for this installation; it reads no store",
    "mcp": "serves the Store methods to an agent over stdio",
    "serve": "keeps a warm process that runs the other commands",
    "bench": "measures the methods against peers; a benchmark is no store operation",
    "hooks install": "edits an agent's settings files, not the store",
    "hooks uninstall": "edits an agent's settings files, not the store",
    "hooks run": "an agent's hook payload turned into Store.ingest (and recall/context) calls",
}


def _commands(command, path=()):
    subs = getattr(command, "commands", None)
    if not subs:
        yield " ".join(path)
        return
    if getattr(command, "invoke_without_command", False) and path:
        yield " ".join(path)                          # `trace sweep` runs too, beside its subcommands
    for name, sub in subs.items():
        yield from _commands(sub, (*path, name))


def _exempt(name: str) -> bool:
    return name in EXEMPT or name.split()[0] in EXEMPT         # (`bench` exempts each of its benchmarks)


def test_every_command_has_its_store_method_or_a_reason_not_to():
    commands = list(_commands(typer.main.get_command(full_app())))
    assert len(commands) > 20
    missing = [c for c in commands if c not in METHODS and not _exempt(c)]
    assert missing == [], f"commands with no Store method and no exemption: {missing}"
    for command, method in METHODS.items():
        assert command in commands, f"{command!r} is no longer a command: update METHODS"
        fn = getattr(Store, method, None)
        assert callable(fn), f"`trace {command}` has no Store.{method}"
        assert (fn.__doc__ or "").strip(), f"Store.{method} has no docstring"
    assert all(reason for reason in EXEMPT.values())


@pytest.fixture(scope="module")
def swept_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("api-cmds")
    shutil.copytree(SAMPLES / "claude-code", root / "in")
    store = Store(root / "store")
    assert all(r.errors == 0 for r in store.ingest([str(root / "in")], embed=False))
    store.sweep()
    return root / "store"


def test_facts_and_ledger_are_what_the_commands_print(swept_store):
    store = Store(swept_store)
    facts = store.facts()
    assert isinstance(facts, FactList) and facts.swept and len(facts) > 0
    assert cli("--store", str(swept_store), "sweep", "facts", "--json").lines() == facts.facts
    assert json.loads(facts.to_json())["facts"] == facts.facts
    ledger = store.ledger(changes=True)
    assert isinstance(ledger, LedgerRows) and len(ledger) > 0 and all(r["action"] != "NONE" for r in ledger)
    assert cli("--store", str(swept_store), "sweep", "ledger", "--changes", "--json").lines() == ledger.rows
    key = ledger.rows[0]["key"]
    assert {r["key"] for r in store.ledger(key)} == {key}


def test_facts_before_any_sweep_say_so(tmp_path):
    store = Store(tmp_path / "s")
    list(store.ingest([str(SAMPLES / "claude-code" / "demo-session.jsonl")], embed=False))
    facts, ledger = store.facts(), store.ledger()
    assert not facts.swept and len(facts) == 0 and not ledger.swept and len(ledger) == 0


def test_revert_is_what_the_command_does(swept_store, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(swept_store, copy)
    store = Store(copy)
    latest = {r["key"]: r["id"] for r in store.ledger(changes=True)}      # each key's latest decision
    first, second = list(latest.values())[:2]
    reverted = store.revert(first)
    assert isinstance(reverted, Reverted) and reverted.row["action"] == "REVERT" and reverted.row["reverts"] == first
    assert reverted.to_dict() == reverted.row
    by_cli = cli("--store", str(copy), "sweep", "revert", second, "--json")
    assert by_cli.code == 0 and by_cli.lines()[0]["reverts"] == second
    assert [r["reverts"] for r in store.ledger() if r["action"] == "REVERT"] == [first, second]


def _bodies(path: Path) -> Path:
    system = "You are a careful assistant."
    calls = [{"model": "gpt-4o", "messages": [{"role": "system", "content": system},
                                              *({"role": "user" if i % 2 == 0 else "assistant",
                                                 "content": f"turn {i}: the gateway port is {8000 + i}"}
                                                for i in range(n))]}
             for n in (1, 3, 5)]
    path.write_text("\n".join(json.dumps(c) for c in calls) + "\n")
    return path


def test_record_calls_and_diff_are_what_the_commands_print(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    bodies = _bodies(tmp_path / "calls.jsonl")
    result = Store(a).record_calls([str(bodies)], session="agent-7")
    assert result.to_dict()["added"] == 3 and len(result.public_records()) == 3
    by_cli = cli("--store", str(b), "anatomy", "record", str(bodies), "--session", "agent-7", "--json")
    assert by_cli.code == 0
    strip = ("turnId", "ts", "recordedAt")                   # fresh per recording
    assert [{k: v for k, v in r.items() if k not in strip} for r in by_cli.lines()] == \
        [{k: v for k, v in r.items() if k not in strip} for r in result.public_records()]
    diff = Store(a).diff("agent-7", 1, 3)
    assert isinstance(diff, DiffResult) and diff.summary["entered"] > 0
    shown = cli("--store", str(a), "anatomy", "diff", "--session", "agent-7", "1", "3", "--json").lines()
    assert shown == [diff.summary, *diff.changes]
    assert json.loads(diff.to_json()) == {"summary": diff.summary, "changes": diff.changes}
