"""`trace sweep`: the three-session scenario (settings and decisions that
change twice), the log left byte-identical, a second sweep that decides
nothing, one sweep at a time, --dry-run, and output shapes."""
from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from stores.errors import StoreLocked
from stores.log.lock import WriterLock
from stores.store import Store
from stores.sweep import facts, ledger_rows, run_sweep
from tests.helpers import cli, openai_conversations
from tests.sessions import ClaudeSession

SCENARIO = Path(__file__).parent / "fixtures" / "sweep_scenario"     # written for these tests: three formats
# key -> (latest value, the values it had before)
LATEST = {
    "api timeout": ("60 seconds", ["30 seconds", "45 seconds"]),
    "database": ("SQLite", ["PostgreSQL", "MySQL"]),
    "log level": ("warn", ["info", "debug"]),
    "session store": ("Valkey", ["Redis", "Memcached"]),
    "cache ttl": ("120s", ["300s", "600s"]),
    "max conns": ("4096", ["1024", "2048"]),
    "deploy region": ("ap-south-1", ["eu-west-1", "us-east-2"]),
    "max retries": ("7", ["3", "5"]),
}


def segment_hashes(store: Store) -> dict[str, str]:
    return {s.path.name: hashlib.sha256(s.path.read_bytes()).hexdigest() for s in store.segments()}


@pytest.fixture(scope="module")
def scenario_template(tmp_path_factory):
    """The nine sessions ingested once (one per day, in order) for every test here."""
    home = tmp_path_factory.mktemp("scenario") / "store"
    for name in ("billing-day1", "billing-day2", "billing-day3", "gateway-rollout-1", "gateway-rollout-2",
                 "gateway-rollout-3", "deploy-chat-1", "deploy-chat-2", "deploy-chat-3"):
        assert cli("--store", str(home), "ingest", "--no-embed", str(SCENARIO / f"{name}.jsonl")).code == 0
    return home


@pytest.fixture
def ingest_scenario(scenario_template):
    def copy(home) -> Store:
        home.rmdir() if home.is_dir() and not any(home.iterdir()) else None
        shutil.copytree(scenario_template, home)
        return Store(home)
    return copy


def test_three_sessions_of_changes_leave_only_the_latest_values(trace_home, ingest_scenario):
    store = ingest_scenario(trace_home)
    before = segment_hashes(store)
    r = cli("sweep")
    assert r.code == 0
    lines = r.lines()
    assert "sweep" in lines[-1] and all("action" in row for row in lines[:-1])
    live = {f["key"]: f for f in facts(store)}
    for key, (value, earlier) in LATEST.items():
        assert live[key]["value"].lower() == value.lower(), key
        supersessions = [row for row in ledger_rows(store, key) if row["action"] in ("UPDATE", "SUPERSEDE")]
        assert len(supersessions) >= 2, key                        # changed twice, both recorded
        for row in supersessions:                                  # each names what it replaced and why
            assert row["source_ids"] and row["target_ids"] and row["old"] and row["new"] and row["reason"]
            assert row["reconciler"] == "rules" and row["version"] >= 1 and row["ts"]
    digest = cli("digest", "--max-lines", "60").out
    for key, (value, earlier) in LATEST.items():
        line = next(ln for ln in digest.splitlines() if ln.lower().startswith(f"- **{key}") or
                    ln.lower().startswith(f"- **{key.replace(' ', '_')}"))
        assert value.lower() in line.lower(), line
        assert "trace show" in line
        for old in earlier:
            assert f": {old.lower()} (" not in line.lower()
    assert "PostgreSQL" not in digest.split("## Recent episodes")[0]      # a replaced value never appears
    assert segment_hashes(store) == before                                # the log is untouched
    again = cli("sweep").lines()
    assert again == [again[-1]] and again[-1]["sweep"]["decisions"] == {}  # nothing new to decide


STORIES = {
    "bus": ([
        ("bus-1", "2026-07-01", ["We'll use Kafka for the event bus.",
                                 "The page size defaults to 50 for every list endpoint."]),
        ("bus-2", "2026-07-02", ["Ops can't run Kafka. We're moving the event bus from Kafka to NATS.",
                                 "Raise the page size to 100, clients complained."]),
        ("bus-3", "2026-07-03", ["After the benchmark, the event bus is now Redpanda.",
                                 "I've bumped the page size from 100 to 200."]),
    ], {"event bus": ["Kafka", "NATS", "Redpanda"],
        "page size": ["50", "200"]}),          # "Raise … to 100" is the agent's imperative: a plan, not a change
    # the subject fronted or stated plainly, a trailing "after all", a change told in the past tense
    "queue": ([
        ("mq-1", "2026-08-01", ["For the message queue we'll go with RabbitMQ.",
                                "Done, RabbitMQ it is.", "The staging database host is db-staging-01."]),
        ("mq-2", "2026-08-02", ["Actually, switch the message queue to Kafka instead of RabbitMQ.",
                                "Switched.", "The staging database host was moved to db-staging-07."]),
        ("mq-3", "2026-08-03", ["We decided to use NATS for the message queue after all.",
                                "Understood.", "Also the staging database host moved to db-staging-02."]),
    ], {"message queue": ["RabbitMQ", "Kafka", "NATS"],
        "staging database host": ["db-staging-01", "db-staging-07", "db-staging-02"]}),
}


@pytest.mark.parametrize("story", sorted(STORIES))
def test_other_phrasings_of_the_same_story_reconcile_the_same_way(tmp_path, trace_home, story):
    """Phrasings the sample sessions do not use: keys follow the thing
    talked about, whoever says it and however."""
    sessions, expected = STORIES[story]
    for sid, day, said in sessions:
        s = ClaudeSession(sid, day=day)
        for i, text in enumerate(said):
            (s.user if i % 2 == 0 else s.assistant)(text)
        cli("ingest", str(s.write(tmp_path / f"{sid}.jsonl")))
    cli("sweep")
    live = {f["key"]: f["value"] for f in facts(Store(trace_home))}
    for key, values in expected.items():
        assert live[key] == values[-1], key
        assert [r["new"] for r in ledger_rows(Store(trace_home), key) if r["action"] != "NONE"] == values, key
    digest = cli("digest").out
    for key, values in expected.items():
        assert values[-1] in digest and not any(f": {old} (" in digest for old in values[:-1]), key


def test_a_dry_run_prints_its_decisions_and_writes_nothing(trace_home, ingest_scenario):
    store = ingest_scenario(trace_home)
    before = {p.relative_to(trace_home): p.read_bytes() for p in trace_home.rglob("*")
              if p.is_file() and p.name != "SWEEP.LOCK"}
    r = cli("sweep", "--dry-run")
    assert r.code == 0
    rows = r.lines()
    assert rows[-1]["sweep"]["dry_run"] and sum(rows[-1]["sweep"]["decisions"].values()) == len(rows) - 1
    after = {p.relative_to(trace_home): p.read_bytes() for p in trace_home.rglob("*")
             if p.is_file() and p.name != "SWEEP.LOCK"}
    assert after == before
    # the real run then decides exactly what the dry run showed
    real = cli("sweep").lines()
    assert [row["id"] for row in real[:-1]] == [row["id"] for row in rows[:-1]]
    assert store.verify().ok


def test_one_sweep_at_a_time_exit_4_or_wait(trace_home, ingest_scenario):
    ingest_scenario(trace_home)
    lock = WriterLock(trace_home, "SWEEP.LOCK", "another sweep").acquire()
    try:
        r = cli("sweep")
        assert r.code == 4 and "another sweep" in r.err and "--wait" in r.err
        threading.Timer(0.4, lock.release).start()
        t = time.monotonic()
        assert cli("sweep", "--wait", "10").code == 0
        assert time.monotonic() - t >= 0.3
    finally:
        lock.release()
    with pytest.raises(StoreLocked):
        held = WriterLock(trace_home, "SWEEP.LOCK").acquire()
        try:
            run_sweep(Store(trace_home))
        finally:
            held.release()


def test_ingest_goes_on_while_a_sweep_holds_its_lock(trace_home, ingest_scenario, tmp_path):
    ingest_scenario(trace_home)
    lock = WriterLock(trace_home, "SWEEP.LOCK").acquire()
    try:
        s = ClaudeSession("late").user("The rate limit is now 300 requests per minute.")
        assert cli("ingest", str(s.write(tmp_path / "late.jsonl"))).code == 0
    finally:
        lock.release()


def test_on_a_terminal_the_summary_is_a_sentence_not_json(trace_home, ingest_scenario, monkeypatch):
    ingest_scenario(trace_home)
    import trace_cli.output as output
    monkeypatch.setattr(output.Output, "__init__", lambda self, json_mode=False, quiet=False: (
        setattr(self, "json", json_mode), setattr(self, "quiet", quiet), setattr(self, "_err_console", None),
        setattr(self, "_out_console", None)) and None)
    r = cli("sweep")
    assert r.code == 0 and "swept events 1.." in r.out and "SUPERSEDE" in r.out
    assert not r.out.lstrip().startswith("{")
    again = cli("sweep")                     # nothing logged since: no backwards range like "4803..4802"
    assert again.code == 0 and "swept no new events" in again.out and ".." not in again.out


def test_an_empty_or_missing_store_is_a_clear_error(tmp_path):
    r = cli("--store", str(tmp_path / "nothing"), "sweep")
    assert r.code == 1 and "trace ingest" in r.err


def test_the_sweep_reads_only_what_came_after_its_watermark(trace_home, ingest_scenario, tmp_path):
    ingest_scenario(trace_home)
    first = cli("sweep").lines()[-1]["sweep"]
    s = ClaudeSession("later", day="2026-08-01").user("Set the deploy region to sa-east-1.")
    cli("ingest", str(s.write(tmp_path / "later.jsonl")))
    second = cli("sweep").lines()
    summary = second[-1]["sweep"]
    assert summary["from_seq"] == first["to_seq"] + 1 and summary["events"] == 1
    assert [(r["action"], r["key"], r["new"]) for r in second[:-1]] == [("SUPERSEDE", "deploy region", "sa-east-1")]
    assert json.loads((trace_home / "sweep" / "state.json").read_text())["watermark"] == summary["to_seq"]


def test_a_dry_runs_scratch_file_lives_in_the_stores_private_tmp(tmp_path):
    """It holds transcript text: never in the system temp, and a crash leaves
    it where the next writer's start-up removes it."""
    from stores.paths import clear_tmp
    from stores.sweep.files import SPOOL
    from stores.sweep.runner import _Spool
    spool = _Spool(tmp_path / SPOOL, scratch_in=tmp_path)
    assert spool.path.parent == tmp_path / "tmp" and (tmp_path / "tmp").stat().st_mode & 0o777 == 0o700
    spool.add({"episode": 1})
    spool._f.close()                        # as a SIGKILL would leave it: the owner's pid is this one, so
    assert clear_tmp(tmp_path) == 0         # a live process keeps it,
    spool.path.rename(spool.path.with_name("sweep-999999999-x.spool"))
    assert clear_tmp(tmp_path) == 1         # and a dead one's is removed


def test_reading_facts_the_ledger_or_the_digest_before_any_sweep_says_to_run_one(trace_home, ingest_scenario):
    ingest_scenario(trace_home)
    for args in (("sweep", "facts"), ("sweep", "ledger"), ("digest",)):
        r = cli(*args)
        assert r.code == 0 and "no sweep has run on this store yet" in r.err and "trace sweep" in r.err, args
    assert cli("sweep").code == 0
    for args in (("sweep", "facts"), ("sweep", "ledger"), ("digest",)):
        assert "no sweep has run" not in cli(*args).err


def test_after_a_sweep_a_ledger_or_facts_query_that_finds_nothing_says_so_and_exits_3(trace_home, ingest_scenario):
    ingest_scenario(trace_home)
    assert cli("sweep").code == 0
    run = cli("sweep", "ledger", "--key", "no such key at all")
    assert run.code == 3 and run.out == "" and "no ledger rows for key 'no such key at all'" in run.err
    assert cli("sweep", "ledger").code == 0 and cli("sweep", "facts").code == 0


def test_facts_after_a_sweep_that_found_none_say_so_and_exit_3(tmp_path):
    chats = openai_conversations(tmp_path / "chats.jsonl", conversations=1, turns=4)
    store = str(tmp_path / "store")
    assert cli("--store", store, "ingest", "--no-embed", str(chats)).code == 0
    assert cli("--store", store, "sweep").code == 0
    for args, said in (([], "no facts that are live"), (["--all"], "no facts")):
        run = cli("--store", store, "sweep", "facts", *args)
        assert run.code == 3 and run.out == "" and said in run.err and "no sweep has run" not in run.err, run.err
