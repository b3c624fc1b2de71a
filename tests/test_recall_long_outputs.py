"""Needles written unlike trace_cli/bench/needles.py: two-word subjects,
facts phrased another way, tool outputs that are logs and JSON lines
long enough to live in artifacts and that name the subject throughout.
A hit's text must hold the fact itself (not only the head/tail preview),
and a two-hop question must bring both halves of its chain."""
from __future__ import annotations

import json
import random

import pytest

from stores.store import Store

SUBJECTS = ["payroll sync", "ledger export", "avatar cache", "invoice mailer", "badge printer", "price feed"]


def _log(rng: random.Random, lines: int, subject: str | None = None) -> str:
    out = []
    for _ in range(lines):
        if rng.random() < 0.5:
            out.append(f"2026-03-{rng.randint(1, 28):02d}T10:{rng.randint(0, 59):02d}:00Z INFO http request "
                       f"{rng.randint(1000, 9999)} took {rng.randint(1, 900)}ms status=200")
        else:
            out.append(json.dumps({"id": rng.randint(1, 10**6), "port": rng.randint(1000, 9000),
                                   "owner": rng.choice(["ana", "bo", "eli"]), "check": "ok"}))
        if subject and rng.random() < 0.1:
            out.append(f"WARN {subject} heartbeat ok, queue depth {rng.randint(0, 50)}")
    return "\n".join(out)


def _fact(rng: random.Random, subject: str, kind: int) -> tuple[str, str, str]:
    """(value, the sentence stating it, a question naming only the subject)."""
    if kind == 0:
        v = str(rng.randint(20000, 60000))
        return v, f"Heads up: the {subject} health check now answers on port {v}.", \
            f"what port does the {subject} health check answer on?"
    if kind == 1:
        v = f"{rng.choice(['dana', 'ivo', 'june'])}.{rng.randint(10, 99)}@corp.example"
        return v, f"Owner of {subject} changed to {v} as of this sprint.", f"who owns {subject} now?"
    v = f"ORA-{rng.randint(10000, 99999)}"
    return v, f"The {subject} migration failed with {v} on the replica.", \
        f"which error did the {subject} migration fail with?"


@pytest.fixture(scope="module")
def long_output_store(tmp_path_factory):
    rng = random.Random(2027)
    root = tmp_path_factory.mktemp("long-outputs")
    messages, facts = [], []
    for t in range(60):
        subject = SUBJECTS[len(facts)] if t % 10 == 3 else None      # one fact a subject: one answer a question
        output, reply = _log(rng, 8), "Nothing unusual."
        if subject:                       # a fact in the middle of a long output that names its subject throughout
            value, sentence, question = _fact(rng, subject, len(facts) % 3)
            output = f"{_log(rng, 150, subject)}\n{sentence}\n{_log(rng, 150, subject)}"
            facts.append((value, question))
        if t == 7:
            reply = "Noted. The price feed container runs image registry.local/team/app42:9f3c2a1b."
        if t == 47:
            output += "\n$ docker inspect registry.local/team/app42:9f3c2a1b\nDigest: sha256:77aa01be93c4d5e6\n"
        messages += [{"role": "user", "content": f"look at step {t}"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{t}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{t}", "content": output},
                     {"role": "assistant", "content": reply}]
    (root / "s.jsonl").write_text(json.dumps({"messages": messages}) + "\n")
    store = Store(root / "store")
    (result,) = store.ingest([str(root / "s.jsonl")])
    assert result.artifacts == len(facts)          # every fact's output lives in an artifact
    return store, facts


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
def test_a_fact_in_a_long_output_comes_back_in_a_hits_text(long_output_store, mode):
    store, facts = long_output_store
    for value, question in facts:
        hits = store.recall(question, k=10, mode=mode).hits
        assert any(value in h.text for h in hits), question


def test_two_hops_bring_the_image_and_its_digest(long_output_store):
    store, _ = long_output_store
    question = "what is the digest of the image the price feed container runs?"
    texts = [h.text for h in store.recall(question, k=10, hops=2).hits]
    assert any("price feed container runs image" in t for t in texts)
    assert any("sha256:77aa01be93c4d5e6" in t for t in texts)
