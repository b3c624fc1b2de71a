"""Synthetic agent sessions with needles, for recall quality checks and the
needle benchmarks.

A session is a run of agent turns (user asks, assistant calls a tool, the
tool answers with `flood` words of plausible output, the assistant
comments). Needles — exact strings people later need back (hashes, paths,
e-mail addresses, error codes, parameters, ports) — are stated once each,
in a tool result or an assistant reply, and asked for by their subject,
never by their value. Two-hop chains split one fact across two distant
events: the first names a file for a service, the second gives that file's
checksum; the question names only the service."""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field

SERVICES = """billing-gateway ledger-sync invoice-renderer quota-broker audit-shipper geo-resolver
mail-relay session-vault search-indexer thumbnail-forge report-scheduler payout-router feature-flagger
rate-limiter token-minter webhook-fanout cache-warmer backup-courier metrics-scraper consent-keeper
fraud-scorer cart-merger price-oracle tax-calculator shipment-tracker inventory-pinger review-moderator
loyalty-ledger coupon-issuer refund-clerk kyc-verifier sms-dispatcher push-notifier dns-updater
cert-rotator log-compactor queue-drainer schema-migrator blob-janitor image-resizer pdf-stamper
ocr-reader translation-proxy voice-transcoder chat-router lead-enricher crm-syncer ab-assigner
churn-predictor""".split()
_WORDS = """build deploy cache retry latency worker queue module config request response handler
timeout buffer stream commit branch merge test suite pipeline artifact container image volume
network socket thread process memory index query schema table column migration rollback release
version package dependency install lint format compile link bundle asset route endpoint payload
header cookie session token scope role policy metric alert dashboard trace span sample window
threshold budget estimate estimate partition shard replica leader follower election heartbeat
""".split()


_GENERIC = ["the health probe", "the build", "the staging box", "the worker", "the proxy", "the scheduler"]


@dataclass
class Needle:
    subject: str
    kind: str
    value: str
    text: str
    query: str
    index: int = 0            # position among the session's messages


@dataclass
class Chain:
    service: str
    path: str
    checksum: str
    first_text: str
    second_text: str
    query: str
    first_index: int = 0
    second_index: int = 0


@dataclass
class NeedleSession:
    messages: list[dict] = field(default_factory=list)
    needles: list[Needle] = field(default_factory=list)
    chains: list[Chain] = field(default_factory=list)

    def write_openai(self, path) -> None:
        with open(path, "w") as f:
            f.write(json.dumps({"messages": self.messages}) + "\n")


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def make_needle(rng: random.Random, subject: str, kind: str) -> Needle:
    """One needle: a fact stated about `subject`, and a question that names
    the subject but not the value."""
    if kind == "hash":
        v = _hex(rng, 40)
        return Needle(subject, kind, v, f"The release of {subject} was cut from commit {v}.",
                      f"which commit was the {subject} release cut from?")
    if kind == "path":
        v = f"/srv/{subject}/conf/{rng.choice(['main', 'prod', 'edge'])}-{rng.randint(100, 999)}.yaml"
        return Needle(subject, kind, v, f"The {subject} settings file is {v}.",
                      f"where is the {subject} settings file?")
    if kind == "email":
        v = f"{subject.split('-')[0]}-oncall-{rng.randint(10, 99)}@example.org"
        return Needle(subject, kind, v, f"Page {v} if {subject} misbehaves overnight.",
                      f"who do we page when {subject} misbehaves?")
    if kind == "code":
        v = f"E_{subject.upper().replace('-', '_')}_{rng.randint(1000, 9999)}"
        return Needle(subject, kind, v, f"{subject} crashed with error code {v} during the smoke test.",
                      f"what error code did {subject} crash with?")
    if kind == "param":
        v = f"max_inflight_{rng.choice(['reads', 'writes', 'jobs'])}={rng.randint(2, 512)}"
        return Needle(subject, kind, v, f"We tuned {subject} with {v} after the load test.",
                      f"how was {subject} tuned after the load test?")
    v = str(rng.randint(20000, 65000))
    return Needle(subject, kind, v, f"{subject} now listens on port {v}.", f"which port does {subject} listen on?")


def make_chain(rng: random.Random, service: str) -> Chain:
    # The file's name says nothing of the service: only the first event links them.
    path = f"/etc/pki/{rng.choice(['signing', 'client', 'root', 'tls'])}-{rng.randint(1000, 9999)}.pem"
    checksum = _hex(rng, 64)
    return Chain(service, path, checksum,
                 f"{service} loads its private key from {path} at startup.",
                 f"sha256sum {path}\n{checksum}  {path}",
                 f"what is the checksum of the key file {service} loads at startup?")


def flood(rng: random.Random, n_words: int) -> str:
    lines, line = [], []
    for _ in range(n_words):
        w = rng.choice(_WORDS)
        if rng.random() < 0.08:
            w = f"{w}_{rng.randint(1, 99)}"
        line.append(w)
        if len(line) >= 10:
            lines.append(" ".join(line))
            line = []
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines)


def build_session(turns: int, needles: int, chains: int = 0, flood_words: int = 80,
                  seed: int = 7, tag: str = "", long_output_words: int = 0,
                  distractors: bool = False) -> NeedleSession:
    """`turns` agent turns of 4 messages each; needles spread evenly; each
    chain's halves at least a quarter of the session apart. A `tag` is
    appended to every subject, so many sessions in one store never state
    different facts about the same subject (each question has one answer).
    With `long_output_words`, every needle stated in a tool result sits in
    the middle of a long output of that many words (a log, a listing):
    the needle's words are then a tiny share of a long document. With
    `distractors`, each needle's question is also asked, in a short user
    line elsewhere, about a generic subject ("the health probe"): short
    lines that share the question's common words but not its subject."""
    rng = random.Random(seed)
    subjects = [f"{s}-{tag}" if tag else s for s in SERVICES]
    rng.shuffle(subjects)
    kinds = ["hash", "path", "email", "code", "param", "port"]
    needle_list = [make_needle(rng, subjects[i % len(subjects)] + ("" if i < len(subjects) else f"-{i}"),
                               kinds[i % len(kinds)]) for i in range(needles)]
    chain_list = [make_chain(rng, f"{subjects[-1 - (i % len(subjects))]}-svc{i}") for i in range(chains)]
    needle_at = {int((i + 0.5) * turns / max(needles, 1)): n for i, n in enumerate(needle_list)}
    chain_first = {int(i * turns / max(chains * 2, 1)): c for i, c in enumerate(chain_list)}
    chain_second = {min(t + max(turns // 4, 1), turns - 1): c for t, c in chain_first.items()}
    s = NeedleSession(needles=needle_list, chains=chain_list)
    decoys = {}
    if distractors:
        for n in needle_list:
            generic = rng.choice(_GENERIC)
            decoys[rng.randrange(turns)] = n.query.replace(f"the {n.subject}", generic).replace(n.subject, generic)
    for t in range(turns):
        call_id = f"call_{t}_{hashlib.sha1(str(t).encode()).hexdigest()[:6]}"
        s.messages.append({"role": "user", "content": decoys.get(t) or f"step {t}: {flood(rng, 12)}"})
        s.messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": rng.choice(["shell", "read_file", "grep"]),
                          "arguments": json.dumps({"arg": rng.choice(_WORDS)})}}]})
        result = flood(rng, flood_words)
        reply = f"Looked at {rng.choice(_WORDS)} and {rng.choice(_WORDS)}; moving on."
        if t in needle_at:
            n = needle_at[t]
            if t % 2 and long_output_words:
                head, tail = flood(rng, long_output_words // 2), flood(rng, long_output_words // 2)
                result = f"{head}\n{n.text}\n{tail}"
                n.index = len(s.messages) + 1
            elif t % 2:
                result = f"{result}\n{n.text}"
                n.index = len(s.messages) + 1
            else:
                reply = f"{reply} {n.text}"
                n.index = len(s.messages) + 2
        if t in chain_first:
            c = chain_first[t]
            result = f"{result}\n{c.first_text}"
            c.first_index = len(s.messages) + 1
        if t in chain_second:
            c = chain_second[t]
            result = f"{result}\n{c.second_text}"
            c.second_index = len(s.messages) + 1
        s.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        s.messages.append({"role": "assistant", "content": reply})
    return s
