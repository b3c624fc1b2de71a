"""`knowledge.jsonl`: the facts, one line per key, sorted by key — live
ones and tombstoned ones (with the earlier values each replaced). Written
only by a sweep's commit (or a revert, or a repair); read by the digest,
by recall's demotions and by agents."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

import orjson

from reducers.fact_reconcile import Fact, Knowledge
from stores.errors import IntegrityError
from stores.sweep.files import KNOWLEDGE
from stores.sweep.ledger_file import BadLine


def fact_id(key: str) -> str:
    return "F" + hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def read_knowledge(store: Path) -> tuple[Knowledge, list[BadLine]]:
    facts: dict[str, Fact] = {}
    bad: list[BadLine] = []
    try:
        f = open(store / KNOWLEDGE, "rb")
    except FileNotFoundError:
        return Knowledge(), bad
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
                fact = Fact.from_json(row)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                bad.append(BadLine(n, "not a fact", line))
                continue
            facts[fact.key] = fact
    return Knowledge(facts), bad


def valid_knowledge(store: Path) -> Knowledge:
    """The facts, or IntegrityError naming the first damaged line: a fact
    list or a digest silently short of a fact would read as the truth."""
    knowledge, bad = read_knowledge(store)
    if bad:
        raise IntegrityError(f"{store / KNOWLEDGE}:{bad[0].line}: {bad[0].reason}; the sweep and the digest write "
                             f"nothing until `trace sweep --repair` rebuilds the facts")
    return knowledge


def knowledge_lines(knowledge: Knowledge) -> Iterator[bytes]:
    for key in sorted(knowledge.facts):
        yield orjson.dumps({"id": fact_id(key), **knowledge.facts[key].as_json()}) + b"\n"


def facts(store, *, include_deleted: bool = False) -> list[dict]:
    """The facts as the last sweep left them (live ones unless asked),
    most important first: the Python API `trace digest` and agents read.
    A damaged knowledge file is IntegrityError (exit 5), never rows left out."""
    knowledge = valid_knowledge(store.dir)
    rows = [{"id": fact_id(f.key), **f.as_json()} for f in knowledge.facts.values() if include_deleted or f.live]
    rows.sort(key=lambda r: (-r["importance"], r["key"]))
    return rows
