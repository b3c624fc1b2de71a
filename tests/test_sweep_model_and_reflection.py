"""The optional model-backed extractor (a fake command here), its fallbacks
and budget; reflection over the retrieval log into revertable tuning."""
from __future__ import annotations

import json
import sys
import textwrap

import orjson
import pytest

from stores.store import Store
from stores.sweep import facts, ledger_rows
from tests.helpers import cli
from tests.sessions import ClaudeSession

FAKE = textwrap.dedent('''
    import json, re, sys, time
    mode = sys.argv[1]
    prompt = sys.stdin.read()
    if mode == "fail":
        sys.stderr.write("model overloaded\\n"); sys.exit(3)
    if mode == "junk":
        print("Sure! Here are the facts: region = eu"); sys.exit(0)
    if mode == "sleep":
        time.sleep(30)
    facts = []
    for seq, text in re.findall(r"^\\[seq (\\d+) user\\] (.*)$", prompt, re.M):
        m = re.search(r"region (?:to|is now) (\\S+?)\\.?$", text)
        if m:
            facts.append({"type": "config", "key": "Deploy Region", "value": m.group(1), "seq": int(seq),
                          "importance": 0.9})
    if mode == "badseq":
        facts.append({"type": "config", "key": "x", "value": "y", "seq": 999999})
    print(json.dumps({"facts": facts}))
''')


@pytest.fixture
def region_store(tmp_path, trace_home):
    for day, text in (("2026-05-01", "Please set the deploy region to eu-west-1."),
                      ("2026-05-02", "OK the deploy region is now us-east-2.")):
        s = ClaudeSession(f"r-{day}", day=day).user(text).assistant("Done.")
        cli("ingest", "--no-embed", str(s.write(tmp_path / f"{day}.jsonl")))
    script = tmp_path / "fake_llm.py"
    script.write_text(FAKE)
    return trace_home, f"{sys.executable} {script}"


def test_a_model_command_extracts_and_its_spend_is_reported(region_store):
    home, cmd = region_store
    r = cli("sweep", "--llm-cmd", f"{cmd} ok", "--llm-budget", "100000")
    assert r.code == 0
    rows, summary = r.lines()[:-1], r.lines()[-1]["sweep"]
    assert [(x["action"], x["key"], x["new"], x["extractor"]) for x in rows] == [
        ("ADD", "deploy region", "eu-west-1", "llm:python3" if "python3" in cmd.split()[0] else rows[0]["extractor"]),
        ("SUPERSEDE", "deploy region", "us-east-2", rows[1]["extractor"])]
    assert all(x["extractor"].startswith("llm:") and x["rule"] == "llm" for x in rows)
    llm = summary["llm"]
    assert llm["calls"] == 2 and llm["tokens"] > 100 and llm["fallbacks"] == 0 and llm["budget"] == 100000


@pytest.mark.parametrize("mode,why", [("fail", "exited 3: model overloaded"), ("junk", "unusable JSON"),
                                      ("badseq", "not one of the batch's events"), ("sleep", "timed out")])
def test_a_failing_model_falls_back_to_the_rules_and_half_answers_are_not_used(region_store, tmp_path, mode, why):
    home, cmd = region_store
    r = cli("sweep", "--llm-cmd", f"{cmd} {mode}", "--llm-timeout", "2")
    assert r.code == 0 and why in r.err and "rule-based" in r.err
    summary = r.lines()[-1]["sweep"]
    assert summary["llm"]["fallbacks"] == 2
    # exactly what a sweep without the model decides
    rules_only = tmp_path / "rules"
    cli("--store", str(rules_only), "ingest", "--no-embed", *sorted(str(p) for p in tmp_path.glob("2026-*.jsonl")))
    cli("--store", str(rules_only), "sweep")
    # (ids and times name each store's own events)
    strip = lambda rows: [{k: v for k, v in x.items() if k not in ("id", "source_ids", "target_ids", "ts")} for x in rows]
    assert strip(ledger_rows(Store(home))) == strip(ledger_rows(Store(rules_only)))
    assert {f["key"]: f["value"] for f in facts(Store(home))} == {"deploy region": "us-east-2"}


def test_the_budget_stops_the_calls_and_says_so(region_store):
    home, cmd = region_store
    r = cli("sweep", "--llm-cmd", f"{cmd} ok", "--llm-budget", "5")
    assert r.code == 0 and "--llm-budget 5 reached" in r.err
    llm = r.lines()[-1]["sweep"]["llm"]
    assert llm["calls"] == 0 and llm["tokens"] == 0 and llm["fallbacks"] == 2
    assert cli("sweep", "--llm-budget", "10").code == 2                  # a budget without a command
    assert cli("sweep", "--llm-cmd", "no-such-command-xyz").code == 0    # missing: every batch falls back


def _recall_row(query: str, scores: list[float], ts: str) -> bytes:
    return orjson.dumps({"ts": ts, "query": query, "query_id": None, "mode": "hybrid", "hops": 1, "k": 10,
                         "filters": {"session": None, "kinds": None, "since": None, "until": None, "min_score": None},
                         "results": [{"seq": 1, "event_id": "x", "score": s, "hop": 1} for s in scores],
                         "latency_ms": 3.0}) + b"\n"


def test_reflection_reports_weak_recalls_and_learns_bounded_revertable_boosts(tmp_path, trace_home):
    s = ClaudeSession("refl", day="2026-05-01")
    s.user("The invoice reconciliation job drifts by a few cents every month.")
    s.assistant("The drift comes from rounding each line before summing; totals should round once.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "refl.jsonl")))
    assert cli("recall", "reconciliation job").code in (0, 3)               # a real row in the real format
    with open(trace_home / "retrievals.jsonl", "ab") as f:
        f.write(_recall_row("why do invoice totals drift", [0.05], "2026-05-02T10:00:00Z"))
        f.write(_recall_row("invoice drift cents", [], "2026-05-02T11:00:00Z"))
        f.write(_recall_row("quantum entanglement", [], "2026-05-02T12:00:00Z"))
        f.write(_recall_row("quantum computing", [], "2026-05-02T12:30:00Z"))
        f.write(_recall_row("invoice reconciliation", [1.9, 1.2], "2026-05-02T13:00:00Z"))    # served well
    r = cli("sweep")
    summary = r.lines()[-1]["sweep"]["reflection"]
    assert summary["recalls"] == 6 and summary["weak_total"] >= 4
    assert {w["query"] for w in summary["weak"]} >= {"why do invoice totals drift", "invoice drift cents",
                                                     "quantum entanglement"}
    tunes = [x for x in r.lines()[:-1] if x["action"] == "TUNE"]
    tuned = {x["key"]: x["new"] for x in tunes}
    assert tuned.get("tuning: invoice") == 1.1 and tuned.get("tuning: drift") == 1.1
    assert "tuning: quantum" not in tuned                   # nothing in the store holds it: no boost helps
    boosts = json.loads((trace_home / "tuning.json").read_text())["term_boosts"]
    assert boosts == {"drift": 1.1, "invoice": 1.1}
    hits = cli("recall", "invoice drift", "--mode", "fulltext").lines()
    assert any(h["scores"].get("tuning") for h in hits)
    # the next sweep reads only the recall made since (the one above), and one recall tunes nothing
    second = cli("sweep").lines()[-1]["sweep"]
    assert second["reflection"]["recalls"] == 1 and second["decisions"] == {}
    # a tuning is undone like any decision
    tune = next(x for x in tunes if x["key"] == "tuning: invoice")
    assert cli("sweep", "revert", tune["id"]).code == 0
    assert json.loads((trace_home / "tuning.json").read_text())["term_boosts"] == {"drift": 1.1}


def test_a_model_that_keeps_failing_is_given_up_on_for_the_rest_of_the_sweep(region_store, tmp_path):
    home, cmd = region_store
    for n in range(5):                                   # seven sessions: seven batches
        s = ClaudeSession(f"more-{n}", day="2026-05-03").user(f"Set the cache size to {n + 1}GB.").assistant("Done.")
        cli("ingest", "--no-embed", str(s.write(tmp_path / f"more-{n}.jsonl")))
    r = cli("sweep", "--llm-cmd", f"{cmd} fail")
    assert r.code == 0
    llm = r.lines()[-1]["sweep"]["llm"]
    assert llm["calls"] == 3 and llm["fallbacks"] == 7         # a broken command is not run once per batch all night
    assert r.err.count("exited 3") == 3 and r.err.count("failed 3 times in a row") == 1
    assert {f["key"]: f["value"] for f in facts(Store(home))}["cache size"] == "5GB"     # the rules did the rest
    missing = cli("--store", str(tmp_path / "other"), "ingest", "--no-embed", str(tmp_path / "more-0.jsonl"))
    assert missing.code == 0
    r = cli("--store", str(tmp_path / "other"), "sweep", "--llm-cmd", "no-such-command-xyz")
    assert r.code == 0 and r.err.count("not found") == 1 and r.lines()[-1]["sweep"]["llm"]["calls"] == 0
