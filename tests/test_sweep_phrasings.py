"""How engineers say a setting or a decision changed, and what the sweep
makes of it: sentences that start in lowercase, lead-ins ("Actually,",
"Going forward"), asides after a comma, values followed by prose, returns to
an earlier value, the same key said with other words, and the negations and
hypotheticals that must never become facts. Written from a held-out check of
three-session stories that the rules had not been fitted to."""
from __future__ import annotations

import hashlib
import json

import pytest

from reducers.fact_keys import FactCandidate, norm_key
from reducers.fact_reconcile import Knowledge, Reconciler
from reducers.fact_rules import prose_facts
from reducers.prose import clauses
from stores.store import Store
from stores.sweep import facts, ledger_rows
from tests.helpers import cli
from tests.sessions import ClaudeSession

SAID = [
    # a sentence that starts with an identifier is still a sentence of its own
    ("Replies were truncated. max_tokens is now 2048.", ("max tokens", "2048")),
    # lead-ins are not part of the subject, and do not hide the rule
    ("Actually, revert the queue backend to SQS.", ("queue backend", "SQS")),
    ("Going forward use Loki as the log store.", ("log store", "Loki")),
    ("FYI the docs URL is https://docs.acme.dev", ("docs url", "https://docs.acme.dev")),
    ("Ops update: the build cache size is 20GB now.", ("build cache size", "20GB")),
    # an aside after a comma, or a qualifier after the value, ends the fact
    ("Use ONNX Runtime for inference, it is faster.", ("inference", "ONNX Runtime")),
    ("The gRPC port is 50051, the usual one.", ("grpc port", "50051")),
    ("Log retention is 30 days on the cluster.", ("log retention", "30 days")),
    # the value stops at the sentence's end, a time adverbial, or after an address
    ("The mirror URL changed to https://mirror2.acme.dev last night.", ("mirror url", "https://mirror2.acme.dev")),
    ("We are moving the deploy region to eu-north-1. us-west-2 was ruled out.", ("deploy region", "eu-north-1")),
    # returning to an earlier value
    ("The sampling temperature's back to 0.3.", ("sampling temperature", "0.3")),
    ("Max retries goes back to 4.", ("max retries", "4")),
    ("Actually, put the object store back to MinIO.", ("object store", "MinIO")),
    # a decision to change something is the change
    ("We decided to switch the mail provider to Postmark.", ("mail provider", "Postmark")),
    ("We are moving the object store off MinIO to S3.", ("object store", "S3")),
    # the value's shape names the setting: a time of day, a version
    ("The backup runs at 04:30 UTC.", ("backup time", "04:30 UTC")),
    ("The retro moved to 15:00.", ("retro time", "15:00")),
    ("Upgrade Go to 1.23 in the service.", ("go version", "1.23")),
    # a change said as a direction, or without its verb
    ("The max upload size went up to 25MB.", ("max upload size", "25MB")),
    ("Sprint length back to 2 weeks.", ("sprint length", "2 weeks")),
    ("Security review: shorten the session lifetime to 8h.", ("session lifetime", "8h")),
    ("Let's keep the page size at 50.", ("page size", "50")),
    ("The coverage threshold is 70%.", ("coverage threshold", "70%")),
    # a capitalised value is a name, even when it spells a verb
    ("We moved hosting to Render.", ("hosting", "Render")),
    ("We chose Terraform for infrastructure.", ("infrastructure", "Terraform")),
]


def test_a_sentence_is_cut_at_and_then_without_leaving_then_on_the_next_clause():
    assert clauses("we set the port to 8443 and then we decided to use Postgres") == [
        "we set the port to 8443", "we decided to use Postgres"]
    said = "The log store is Loki and then the queue backend is SQS."
    assert [(f.key, f.value) for f in prose_facts(said, "user")] == [("log store", "Loki"), ("queue backend", "SQS")]


@pytest.mark.parametrize("text,expected", SAID, ids=[t for t, _ in SAID])
def test_a_change_said_this_way_is_read_as_its_key_and_value(text, expected):
    assert [(f.key, f.value) for f in prose_facts(text, "user")] == [expected]


NOT_FACTS = [
    "Don't set the request timeout to 5s, it breaks uploads.",
    "We won't move the CDN to Akamai.",
    "Would the request timeout be better at 90s?",
    "If we used R2 the egress would be free.",
    "Should we point the DB host at pg-scratch for the benchmark?",
]


@pytest.mark.parametrize("text", NOT_FACTS)
def test_negations_questions_and_hypotheticals_state_no_fact(text):
    assert prose_facts(text, "user") == []


@pytest.mark.parametrize("spellings", [
    ("the DB hostname", "database host", "DB_HOST"),
    ("the deadline for the launch", "launch deadline"),
    ("the Python version for this project", "Python version"),
    ("time zone", "TZ", "timezone"),
    ("maximum connections", "max_connections"),
])
def test_one_thing_said_in_other_words_is_one_key(spellings):
    assert len({norm_key(s) for s in spellings}) == 1


def _said(key: str, value: str, n: int) -> FactCandidate:
    return FactCandidate(type="config", key=key, value=value, text=f"{key} is {value}", importance=0.7, label=key,
                         source={"id": f"e{n}", "seq": n, "session_id": "s", "ts": f"2026-05-0{n}T09:00:00Z"})


def test_a_key_said_with_more_or_fewer_words_is_the_live_key_it_names():
    reconciler = Reconciler(Knowledge())
    reconciler.decide(_said("auth", "Auth0", 1))
    row, = reconciler.decide(_said("auth provider", "Cognito", 2))
    assert (row["action"], row["key"], row["old"], row["source_ids"], row["target_ids"]) == \
        ("SUPERSEDE", "auth", "Auth0", ["e2"], ["e1"])
    row, = reconciler.decide(_said("log retention", "7 days", 3))
    row, = reconciler.decide(_said("retention period", "14 days", 4))
    assert (row["action"], row["key"]) == ("SUPERSEDE", "log retention")


def test_a_fact_kept_under_an_older_spelling_of_its_key_is_still_the_one_a_change_moves():
    """Keys now spell shortened words one way ("db" is "database"); a store
    swept before keeps "db host", and the next change to the database host
    supersedes it instead of starting a second fact beside it."""
    reconciler = Reconciler(Knowledge())
    reconciler.decide(_said("db host", "db-staging-01", 1))          # as an earlier release keyed it
    assert norm_key("the DB hostname") == "database host"
    row, = reconciler.decide(_said(norm_key("the DB hostname"), "db-staging-02", 2))
    assert (row["action"], row["key"], row["old"]) == ("SUPERSEDE", "db host", "db-staging-01")
    assert [f.value for f in reconciler.knowledge.live()] == ["db-staging-02"]


def test_a_key_that_could_name_two_live_keys_stays_its_own():
    reconciler = Reconciler(Knowledge())
    reconciler.decide(_said("staging url", "https://stg.acme.dev", 1))
    reconciler.decide(_said("prod url", "https://acme.dev", 2))
    row, = reconciler.decide(_said("url", "https://new.acme.dev", 3))
    assert (row["action"], row["key"]) == ("ADD", "url")


def _openai_session(path, session: str, said: list[str]):
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(said)]
    path.write_text(json.dumps({"id": session, "messages": messages}) + "\n")
    return path


def test_three_sessions_in_two_formats_keep_only_the_latest_values(tmp_path, trace_home):
    """A host renamed twice and said three ways; an object store changed and
    then put back to its first value; a hypothetical and a question that
    must not become facts."""
    first = ClaudeSession("infra-1", day="2026-05-01")
    first.user("FYI the DB hostname is pg-a.internal.").assistant("Noted.")
    first.user("Should we point the DB host at pg-scratch for the benchmark?").assistant("Better not.")
    first.user("The object store is MinIO.").assistant("Okay.")
    third = ClaudeSession("infra-3", day="2026-05-03")
    third.user("S3 egress costs too much. Actually, put the object store back to MinIO.").assistant("Done.")
    third.user("One more move: the database host is now pg-c.internal.").assistant("Okay.")
    files = [first.write(tmp_path / "infra-1.jsonl"),
             _openai_session(tmp_path / "infra-2.jsonl", "infra-2", [
                 "We are moving the object store off MinIO to S3.", "I'll migrate the buckets.",
                 "Database host changed to pg-b.internal last night.", "Updated.",
                 "If we used R2 the egress would be free.", "True, but we have credits with AWS."]),
             third.write(tmp_path / "infra-3.jsonl")]
    for f in files:
        assert cli("ingest", "--no-embed", str(f)).code == 0
    store = Store(trace_home)
    before = hashlib.sha256(b"".join(s.path.read_bytes() for s in store.segments())).hexdigest()
    assert cli("sweep").code == 0
    assert hashlib.sha256(b"".join(s.path.read_bytes() for s in store.segments())).hexdigest() == before

    live = {f["key"]: f["value"] for f in facts(store)}
    assert live["database host"] == "pg-c.internal" and live["object store"] == "MinIO"
    assert not [k for k, v in live.items() if v in ("pg-scratch", "R2")]
    for key, values in {"database host": ["pg-a.internal", "pg-b.internal", "pg-c.internal"],
                        "object store": ["MinIO", "S3", "MinIO"]}.items():
        rows = [r for r in ledger_rows(store, key) if r["action"] != "NONE"]
        assert [r["new"] for r in rows] == values, key
        assert all(r["source_ids"] and r["target_ids"] for r in rows[1:]), key
    digest = cli("digest").out
    assert "pg-c.internal" in digest and not any(f": {old} (" in digest for old in ("pg-a.internal", "pg-b.internal",
                                                                                   "S3"))
    for f in files:
        cli("ingest", "--no-embed", str(f))
    again = cli("sweep").lines()
    assert again[-1]["sweep"]["decisions"] == {}
