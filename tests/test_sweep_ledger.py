"""The ledger: reverts, deletes only when allowed, damage reported and
repaired, bounded size, and recall demoting superseded events by key."""
from __future__ import annotations

import orjson
import pytest

import stores.sweep.ledger_file as ledger_file
from reducers.fact_keys import FactCandidate
from reducers.fact_reconcile import Knowledge, Reconciler
from stores.ledger import ledger_marks
from stores.notes import add_note
from stores.store import Store
from stores.sweep import episodes, facts, ledger_rows, run_sweep
from tests.helpers import cli
from tests.sessions import ClaudeSession


def _three_days(tmp_path) -> list:
    out = []
    for day, text in (("2026-05-01", "Let's set the API timeout to 30s."),
                      ("2026-05-02", "The API timeout is now 45s."),
                      ("2026-05-03", "Bump the API timeout from 45s to 60s.")):
        s = ClaudeSession(f"t-{day}", day=day).user(text).assistant("ok, noted")
        out.append(s.write(tmp_path / f"{day}.jsonl"))
    return out


def _swept(tmp_path, home) -> Store:
    for f in _three_days(tmp_path):
        cli("ingest", "--no-embed", str(f))
    assert cli("sweep").code == 0
    return Store(home)


def _live(store) -> dict:
    return {f["key"]: f["value"] for f in facts(store)}


def test_revert_undoes_the_latest_decision_and_is_itself_a_row(tmp_path, trace_home):
    store = _swept(tmp_path, trace_home)
    rows = [r for r in ledger_rows(store, "api timeout") if r["action"] != "NONE"]
    assert [r["new"] for r in rows] == ["30s", "45s", "60s"]
    first_src = rows[0]["source_seqs"][0]
    marks = ledger_marks(trace_home)
    assert marks.get(first_src) == "UPDATE"                              # superseded: recall ranks it lower
    # only the latest decision for a key can be undone
    older = cli("sweep", "revert", rows[1]["id"])
    assert older.code == 1 and rows[2]["id"] in older.err
    undo = cli("sweep", "revert", rows[2]["id"])
    assert undo.code == 0
    row = undo.lines()[0]
    assert row["action"] == "REVERT" and row["reverts"] == rows[2]["id"] and row["new"] == "45s"
    assert _live(store)["api timeout"] == "45s"
    assert ledger_rows(store)[-1]["id"] == row["id"]
    assert ledger_marks(trace_home).get(rows[2]["source_seqs"][0]) is None   # no longer superseding anything
    # the revert can be followed by reverting what is now the latest
    assert cli("sweep", "revert", rows[1]["id"]).code == 1          # the REVERT row is the latest now
    assert cli("sweep", "revert", row["id"]).code == 1              # a revert is not reverted
    assert cli("sweep", "revert", "Lnope").code == 1                # unknown id
    none_row = next((r for r in ledger_rows(store) if r["action"] == "NONE"), None)
    if none_row:
        assert cli("sweep", "revert", none_row["id"]).code == 1


def test_revert_of_an_add_forgets_the_fact(tmp_path, trace_home):
    s = ClaudeSession("one").user("We decided to use Stripe for payments.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "one.jsonl")))
    cli("sweep")
    store = Store(trace_home)
    (add,) = [r for r in ledger_rows(store) if r["action"] == "ADD"]
    assert _live(store) == {"payments": "Stripe"}
    assert cli("sweep", "revert", add["id"]).code == 0
    assert _live(store) == {}


def _env_session(tmp_path, removed: bool):
    s = ClaudeSession("env", day="2026-05-01")
    s.tool("Write", {"file_path": "/app/.env", "content": "PORT=8080\n"})
    s.tool("Edit", {"file_path": "/app/.env", "old_string": "PORT=8080\n", "new_string": "PORT=8080\nFEATURE_X=on\n"})
    if removed:
        s.tool("Edit", {"file_path": "/app/.env", "old_string": "PORT=8080\nFEATURE_X=on\n", "new_string": "PORT=8080\n"})
    return s.write(tmp_path / "env.jsonl")


def test_delete_only_when_allowed_and_only_when_the_source_removes_it(tmp_path):
    src = _env_session(tmp_path, removed=True)
    off, on = Store(tmp_path / "off"), Store(tmp_path / "on")
    for store in (off, on):
        list(store.ingest([str(src)], embed=False))
    rows_off = []
    run_sweep(off, on_decision=rows_off.append)
    assert ("NONE", "feature x") in [(r["action"], r["key"]) for r in rows_off]
    assert "--allow-delete" in next(r["reason"] for r in rows_off if r["key"] == "feature x" and r["action"] == "NONE")
    assert _live(off)["feature x"] == "on"
    rows_on = []
    run_sweep(on, allow_delete=True, on_decision=rows_on.append)
    (delete,) = [r for r in rows_on if r["action"] == "DELETE"]
    assert delete["key"] == "feature x" and delete["old"] == "on" and delete["target_seqs"]
    assert "feature x" not in _live(on) and _live(on)["port"] == "8080"
    assert ledger_marks(on.dir)[delete["target_seqs"][0]] == "DELETE"
    assert "FEATURE_X" not in cli("--store", str(on.dir), "digest").out
    # undone, the fact is back
    assert cli("--store", str(on.dir), "sweep", "revert", delete["id"]).code == 0
    assert _live(on)["feature x"] == "on"


def test_a_damaged_ledger_line_stops_the_sweep_until_repair(tmp_path, trace_home):
    store = _swept(tmp_path, trace_home)
    good = (trace_home / "ledger.jsonl").read_bytes()
    n = good.count(b"\n")
    first_id = ledger_rows(store)[0]["id"]
    (trace_home / "ledger.jsonl").write_bytes(good + b'{"action": "UPDATE", "key": \n')
    s = ClaudeSession("later", day="2026-05-04").user("The API timeout is now 90s.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "later.jsonl")))
    r = cli("sweep")
    assert r.code == 5 and f"ledger.jsonl:{n + 1}" in r.err and "--repair" in r.err
    assert cli("sweep", "revert", first_id).code == 5                        # nothing is written meanwhile
    fixed = cli("sweep", "--repair")
    assert fixed.code == 0 and fixed.lines()[-1]["sweep"]["decisions"] == {"SUPERSEDE": 1}
    quarantined = list((trace_home / "quarantine").glob("ledger-*.bad"))
    assert quarantined and b'"key": ' in quarantined[0].read_bytes()        # kept, not dropped
    assert (trace_home / "ledger.jsonl").read_bytes().startswith(good)
    assert _live(store)["api timeout"] == "90s"


def test_damaged_facts_are_rebuilt_from_the_ledger(tmp_path, trace_home):
    store = _swept(tmp_path, trace_home)
    (trace_home / "knowledge.jsonl").write_bytes(b"garbage\n")
    assert cli("sweep").code == 5
    assert cli("sweep", "--repair").code == 0
    assert _live(store)["api timeout"] == "60s"


def test_the_ledger_keeps_each_keys_latest_decision_plus_a_bounded_tail(monkeypatch):
    monkeypatch.setattr(ledger_file, "TAIL_ROWS", 10)
    knowledge = Knowledge()
    rec = Reconciler(knowledge)
    rows = []
    for i in range(200):
        key = f"setting {i % 20}"
        cand = FactCandidate(type="config", key=key, value=str(i), text="", importance=0.5,
                             source={"id": f"e{i}", "seq": i + 1, "ts": f"2026-01-01T00:00:{i % 60:02d}Z",
                                     "session_id": "s"})
        rows.extend(rec.decide(cand))
    kept = ledger_file.compact(rows, 10)
    latest = {}
    for r in rows:
        if r["action"] != "NONE":
            latest[r["key"]] = r["id"]
    assert set(latest.values()) <= {r["id"] for r in kept}
    assert len(kept) <= 20 + 10
    assert [r["id"] for r in kept] == [r["id"] for r in rows if r["id"] in {k["id"] for k in kept}]  # order kept


def test_episodes_split_at_a_clear_and_a_change_of_subject_and_are_rebuilt(tmp_path, trace_home):
    s = ClaudeSession("ep", day="2026-05-01")
    s.user("The payments webhook returns 500 when the signature header is missing.")
    for i in range(4):
        s.assistant(f"Looked at the payments webhook signature verification, step {i}.")
    s.user("Add a regression test for the payments webhook signature.")
    s.user("<command-name>/clear</command-name>")
    s.user("Now let's write the release notes for version 2.4 of the mobile app.")
    for i in range(6):
        s.assistant(f"Drafted the mobile release notes section {i} about offline mode and sync.")
    s.user("Unrelated: rename the staging database to stg-main and update the connection strings.")
    s.assistant("Renamed the staging database and updated the connection strings.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "ep.jsonl")))
    cli("sweep")
    store = Store(trace_home)
    eps = episodes(store, "ep")
    assert len(eps) == 3
    assert eps[0]["summary"].startswith("The payments webhook returns 500")
    assert "release notes" in eps[1]["summary"] and "staging database" in eps[2]["summary"]
    assert eps[0]["end_seq"] < eps[1]["start_seq"] <= eps[1]["end_seq"] < eps[2]["start_seq"]
    before = [(e["start_seq"], e["end_seq"], e["summary"]) for e in eps]
    (trace_home / "episodes.jsonl").unlink()
    s.user("And bump the app version to 2.5 while you are at it.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "ep.jsonl")))
    r = cli("sweep")
    assert "rebuilding the episodes" in r.err
    again = [(e["start_seq"], e["end_seq"], e["summary"]) for e in episodes(store, "ep")]
    assert again[:2] == before[:2] and again[2][0] == before[2][0]


def test_a_bare_setting_name_finds_the_one_nested_key_it_ends():
    """A YAML file read whole gives `payments.timeout_ms`; an edit of just
    that line, or a chat about it, says `timeout_ms`: the same setting."""
    knowledge = Knowledge()
    rec = Reconciler(knowledge)

    def cand(key, value, seq):
        return FactCandidate(type="config", key=key, value=value, text="", importance=0.5,
                             source={"id": f"e{seq}", "seq": seq, "ts": f"2026-01-0{seq}T00:00:00Z", "session_id": "s"})
    rec.decide(cand("payments.timeout ms", "800", 1))
    rec.decide(cand("search.timeout ms", "50", 2))
    (row,) = rec.decide(cand("retries", "2", 3))                 # no nested key ends in it: its own key
    assert row["key"] == "retries"
    rec.decide(cand("payments.retries", "1", 4))
    (row,) = rec.decide(cand("timeout ms", "3000", 5))           # two nested keys end in it: ambiguous
    assert row["action"] == "ADD" and row["key"] == "timeout ms"
    knowledge.drop("search.timeout ms")
    knowledge.drop("timeout ms")
    (row,) = rec.decide(cand("timeout ms", "3000", 6))
    assert (row["action"], row["key"], row["old"]) == ("SUPERSEDE", "payments.timeout ms", "800")


def test_reading_a_damaged_ledger_or_facts_file_names_the_line_instead_of_leaving_rows_out(tmp_path, trace_home):
    _swept(tmp_path, trace_home)
    facts_before = cli("sweep", "facts").out
    knowledge = trace_home / "knowledge.jsonl"
    good = knowledge.read_bytes()
    knowledge.write_bytes(b'{"key": broken\n' + good)
    for args in (("sweep", "facts"), ("digest",), ("digest", "--out", str(tmp_path / "MEMORY.md"))):
        r = cli(*args)
        assert r.code == 5 and "knowledge.jsonl:1" in r.err and "trace sweep --repair" in r.err, args
        assert r.out == ""                                   # never a digest or a fact list silently short
    assert not (tmp_path / "MEMORY.md").exists()
    assert cli("sweep", "--repair").code == 0
    assert cli("sweep", "facts").out == facts_before

    ledger = trace_home / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes() + b'{"action": "UPDATE", "key": \n')
    r = cli("sweep", "ledger")
    assert r.code == 5 and "ledger.jsonl:" in r.err and "trace sweep --repair" in r.err and r.out == ""
    assert cli("sweep", "--repair").code == 0 and cli("sweep", "ledger").code == 0


def test_an_episode_of_notes_is_summarised_by_what_they_say(tmp_path, trace_home):
    assert cli("note", "add", "-c", "decision", "Squash-merge pull requests and never rebase shared branches.").code == 0
    add_note(Store(trace_home), "use uv", "preference", session="other")      # a session of notes alone
    assert cli("sweep").code == 0
    summaries = {ep["session_id"]: ep["summary"] for ep in episodes(Store(trace_home))}
    assert "Squash-merge pull requests" in summaries["trace-notes"] and summaries["other"] == "use uv"
    assert "(no prose)" not in cli("digest").out


def test_ledger_key_takes_the_key_as_the_digest_shows_it(tmp_path, trace_home):
    s = ClaudeSession("env", day="2026-05-01").user("Set DATABASE_URL to postgres://db-02/app.").assistant("Done.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "env.jsonl")))
    assert cli("sweep").code == 0
    stored = cli("sweep", "ledger", "--key", "database url").lines()
    assert stored and stored[0]["new"] == "postgres://db-02/app"
    for spelled in ("DATABASE_URL", "database-url", "Database URL"):
        assert cli("sweep", "ledger", "--key", spelled).lines() == stored, spelled
