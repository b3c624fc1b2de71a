"""Nightly reconciliation of facts (paper 8.2–8.3, Annex A.3): each fact
candidate against what is already known, one decision per candidate.

    ADD        the key is new (or was tombstoned): a live fact
    UPDATE     a later value that refines the known one ("PostgreSQL" ->
               "PostgreSQL 16"): the old value is superseded
    SUPERSEDE  a later value that contradicts the known one
    DELETE     the source explicitly removes the key (an env line taken out,
               a package uninstalled, an entity cancelled) — only when
               deletes are allowed; otherwise a NONE that says so
    NONE       already known, older than what is known, or nothing to delete

Decisions are returned as ledger rows and applied to `Knowledge` (the
facts, one per key, with a bounded history of earlier values). Everything
here is a pure function of the candidates in order: no clock (a row's
`ts` is its source event's time), ids derived from content, so the same
events always yield byte-identical rows. This is not the hot-path
reconciler of reducers/reconcile.py, which only ever says ADD or NONE per
event at the append chokepoint."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace

from reducers.fact_keys import FactCandidate, key_core, norm_key, norm_value
from reducers.fact_personal import keyed_by_value, switched_kind

RECONCILER = "rules"
RECONCILER_VERSION = 1
STATE_ACTIONS = ("ADD", "UPDATE", "SUPERSEDE", "DELETE", "REVERT")   # decisions that change a fact
MAX_SOURCES = 6
MAX_HISTORY = 8
MENTION_BOOST = 0.03
MAX_IMPORTANCE = 1.0


def _plain_key(key: str) -> bool:
    """A key named in words (not "decision: …", not a dotted file path)."""
    return ": " not in key and "." not in key


def row_id(*parts) -> str:
    digest = hashlib.blake2b("\x1f".join("" if p is None else str(p) for p in parts).encode("utf-8", "surrogatepass"),
                             digest_size=6).hexdigest()
    return f"L{digest}"


def _since(source: dict) -> str | None:
    """When a fact took its value: its source's own time. An event with no
    time of its own (only when it was ingested) cannot order facts."""
    return source.get("ts") if source.get("dated", True) else None


def _ref(source: dict) -> dict:
    return {"id": source.get("id"), "seq": source.get("seq"), "session_id": source.get("session_id"),
            "ts": source.get("ts")}


def _refines(old: str, new: str) -> bool:
    """"postgresql 16" refines "postgresql": the old value whole, as words
    of the new one ("neovim" is another editor than "vim", not more of it)."""
    return re.search(rf"(?<![\w.-]){re.escape(old)}(?![\w.-])", new) is not None


@dataclass
class Fact:
    key: str
    label: str
    type: str
    value: str
    importance: float
    status: str = "live"                  # live | deleted
    since: str | None = None              # ts of the source that set the current value
    sources: list[dict] = field(default_factory=list)    # [{id, seq, session_id, ts}], first + latest
    mentions: int = 1
    history: list[dict] = field(default_factory=list)    # earlier values, newest first: {value, sources, until}
    ledger_id: str | None = None          # the decision that gave the fact its current state
    rule: str = ""

    def as_json(self) -> dict:
        return {"key": self.key, "label": self.label, "type": self.type, "value": self.value,
                "importance": round(self.importance, 3), "status": self.status, "since": self.since,
                "sources": self.sources, "mentions": self.mentions, "history": self.history,
                "ledger_id": self.ledger_id, "rule": self.rule}

    @classmethod
    def from_json(cls, d: dict) -> "Fact":
        return cls(key=d["key"], label=d.get("label") or d["key"], type=d.get("type") or "config",
                   value=str(d.get("value") or ""), importance=float(d.get("importance") or 0.5),
                   status=d.get("status") or "live", since=d.get("since"), sources=list(d.get("sources") or []),
                   mentions=int(d.get("mentions") or 1), history=list(d.get("history") or []),
                   ledger_id=d.get("ledger_id"), rule=d.get("rule") or "")

    @property
    def live(self) -> bool:
        return self.status == "live"

    def add_source(self, source: dict) -> None:
        ref = _ref(source)
        if any(s.get("id") == ref["id"] for s in self.sources):
            return
        self.sources.append(ref)
        if len(self.sources) > MAX_SOURCES:          # keep the first and the latest ones
            del self.sources[1]


class Knowledge:
    """The facts, one per key, plus an index of live values (to find the key
    an "instead of B" means)."""

    def __init__(self, facts: dict[str, Fact] | None = None):
        self.facts: dict[str, Fact] = facts or {}
        self._by_value: dict[str, set[str]] = {}
        self._by_leaf: dict[str, set[str]] = {}          # "timeout ms" -> {"payments.timeout ms"}
        self._by_head: dict[str, set[str]] = {}          # "retention" -> {"log retention"}
        self._respelled: dict[str, set[str]] = {}        # "database host" -> {"db host"} (an older spelling)
        for f in self.facts.values():
            if f.live:
                self._index(f)

    def _index(self, fact: Fact) -> None:
        self._by_value.setdefault(norm_value(fact.value), set()).add(fact.key)
        if "." in fact.key:
            self._by_leaf.setdefault(fact.key.rsplit(".", 1)[1], set()).add(fact.key)
        if _plain_key(fact.key):
            self._by_head.setdefault(key_core(fact.key)[-1], set()).add(fact.key)
            if (now := norm_key(fact.key)) != fact.key:
                self._respelled.setdefault(now, set()).add(fact.key)

    def _unindex(self, fact: Fact) -> None:
        keys = self._by_value.get(norm_value(fact.value))
        if keys is not None:
            keys.discard(fact.key)
            if not keys:
                del self._by_value[norm_value(fact.value)]
        if "." in fact.key:
            leaf = fact.key.rsplit(".", 1)[1]
            self._by_leaf.get(leaf, set()).discard(fact.key)
        if _plain_key(fact.key):
            self._by_head.get(key_core(fact.key)[-1], set()).discard(fact.key)
            self._respelled.get(norm_key(fact.key), set()).discard(fact.key)

    def set(self, fact: Fact) -> None:
        old = self.facts.get(fact.key)
        if old is not None:
            self._unindex(old)
        self.facts[fact.key] = fact
        if fact.live:
            self._index(fact)

    def drop(self, key: str) -> None:
        old = self.facts.pop(key, None)
        if old is not None:
            self._unindex(old)

    def key_with_leaf(self, leaf: str) -> str | None:
        """The one live dotted key ending in `leaf` (`payments.timeout_ms`
        for `timeout_ms`), when exactly one does."""
        keys = self._by_leaf.get(leaf) or set()
        return next(iter(keys)) if len(keys) == 1 else None

    def key_spelled_before(self, key: str) -> str | None:
        """The one live key that an earlier release spelled another way
        ("db host", which keys now spell "database host"): a store's facts
        keep the key they were reconciled under, and a new candidate still
        finds them."""
        keys = self._respelled.get(key) or set()
        return next(iter(keys)) if len(keys) == 1 else None

    def key_said_otherwise(self, key: str) -> str | None:
        """The one live key that names the same thing with more or fewer
        words ("retention period" for "log retention", "timezone" for
        "cluster timezone"): same head word, one's words within the other's.
        None when no key, or several, would do."""
        if not _plain_key(key):
            return None
        core = key_core(key)
        found = [k for k in self._by_head.get(core[-1]) or () if k != key
                 and (set(key_core(k)) <= set(core) or set(core) <= set(key_core(k)))]
        return found[0] if len(found) == 1 else None

    def keys_holding(self, value: str) -> list[str]:
        return sorted(self._by_value.get(norm_value(value)) or ())

    def key_for_replaced(self, value: str, fact_type: str | None = None) -> str | None:
        """The live key whose current value is `value`: of several, those of
        the same type as the new fact, then the one set last."""
        keys = sorted(self._by_value.get(norm_value(value)) or ())
        if len(keys) > 1 and fact_type:
            keys = [k for k in keys if self.facts[k].type == fact_type] or keys
        if not keys:
            return None
        return max(keys, key=lambda k: (self.facts[k].since or "", k))

    def live(self) -> list[Fact]:
        return [f for f in self.facts.values() if f.live]


@dataclass
class Reconciler:
    """Applies candidates to knowledge, yielding one ledger row each."""
    knowledge: Knowledge
    allow_delete: bool = False
    extractor: str = "rules/1"            # named in every row, with the model's name for its facts
    model: str = "llm"

    def decide(self, cand: FactCandidate, index: int = 0) -> list[dict]:
        """The decisions for one candidate (`index`: its place among its
        event's candidates, part of the row ids). One row, or one per key
        for a prefix removal."""
        if cand.delete:
            return self._delete(cand, index)
        if cand.retract:
            cand = self._retracted_by_value(cand)
            return [self._retract(cand, index)] if self._retractable(cand) else \
                [self._row("NONE", cand, cand.key, index, None, None, [], "retraction of no value set in this session")]
        keys = self._resolve(cand)
        if len(keys) > 1:                # "from B to A" where several keys held B: each moves on
            return [row for k in keys for row in self._decide_key(cand, k, index)]
        return self._decide_key(cand, keys[0], index)

    def _decide_key(self, cand: FactCandidate, key: str, index: int) -> list[dict]:
        src = cand.source or {}
        fact = self.knowledge.facts.get(key)
        if fact is None or not fact.live:
            reason = "re-added after it was deleted" if fact is not None else "new fact"
            return [self._add(cand, key, index, reason, fact)]
        if norm_value(fact.value) == norm_value(cand.value):
            fact.mentions += 1
            fact.add_source(src)
            fact.importance = min(MAX_IMPORTANCE, max(fact.importance, cand.importance) + MENTION_BOOST)
            return [self._row("NONE", cand, key, index, fact.value, cand.value, [], "already known")]
        if fact.since and _since(src) and _since(src) < fact.since:
            return [self._row("NONE", cand, key, index, fact.value, cand.value, [],
                              f"older than the known value (set {fact.since})")]
        return [self._supersede(cand, key, index, fact)]

    # -- the decisions -----------------------------------------------------

    def _resolve(self, cand: FactCandidate) -> list[str]:
        """A choice said to replace a value ("use A instead of B") belongs to
        the key that holds B. When several live keys hold a word-valued B
        and the candidate names no key of its own, all of them do."""
        if cand.replaces:
            current = self.knowledge.facts.get(cand.key)
            if current is None or not current.live or norm_value(current.value) != norm_value(cand.replaces):
                found = self.knowledge.keys_holding(cand.replaces)
                if len(found) > 1 and cand.label == cand.key and not norm_value(cand.replaces)[:1].isdigit():
                    return found
                best = self.knowledge.key_for_replaced(cand.replaces, cand.type)
                if best is not None:
                    return [best]
        known = self.knowledge.facts.get(cand.key)
        prefix = keyed_by_value(cand.key)
        if (known is None or not known.live) and prefix:
            # "I use neovim" after "I switched from vim to neovim": the key that holds it
            held = [k for k in self.knowledge.keys_holding(cand.value) if k.startswith(prefix)]
            if held:
                return held[:1]
            # "I switched to Podman" with Docker known: the one container runtime moves on
            kin = [f.key for f in self.knowledge.live()
                   if switched_kind(cand.key, cand.value, cand.rule, f.key, f.value)]
            if len(kin) == 1:
                return kin
        if (known is None or not known.live) and _plain_key(cand.key):
            older = self.knowledge.key_spelled_before(cand.key)
            if older is not None:
                return [older]
            # "timeout_ms" said or edited where the file's full path was read before
            nested = self.knowledge.key_with_leaf(cand.key)
            if nested is not None:
                return [nested]
            same = self.knowledge.key_said_otherwise(cand.key)
            if same is not None:
                return [same]
        return [cand.key]

    def _add(self, cand: FactCandidate, key: str, index: int, reason: str, tombstoned: Fact | None) -> dict:
        row = self._row("ADD", cand, key, index, None, cand.value, [], reason)
        fact = Fact(key=key, label=cand.label or key, type=cand.type, value=cand.value, importance=cand.importance,
                    since=_since(cand.source or {}), sources=[_ref(cand.source or {})], ledger_id=row["id"],
                    rule=cand.rule, history=list(tombstoned.history) if tombstoned else [])
        if tombstoned is not None:
            fact.history.insert(0, {"value": tombstoned.value, "sources": tombstoned.sources,
                                    "until": fact.since, "deleted": True})
            del fact.history[MAX_HISTORY:]
        self.knowledge.set(fact)
        return row

    def _supersede(self, cand: FactCandidate, key: str, index: int, fact: Fact) -> dict:
        old, new = norm_value(fact.value), norm_value(cand.value)
        action = "UPDATE" if old and _refines(old, new) else "SUPERSEDE"
        reason = "a later, more detailed value" if action == "UPDATE" else "a later value for the same key"
        if cand.replaces and norm_value(cand.replaces) == old:
            reason += f" (says it replaces {fact.value})"
        row = self._row(action, cand, key, index, fact.value, cand.value, fact.sources, reason)
        fact.history.insert(0, {"value": fact.value, "sources": fact.sources, "since": fact.since,
                                "until": (cand.source or {}).get("ts")})
        del fact.history[MAX_HISTORY:]
        label = cand.label if cand.key == key and cand.label != cand.key else fact.label
        self.knowledge.set(Fact(key=key, label=label, type=cand.type, value=cand.value,
                                importance=max(cand.importance, fact.importance), since=_since(cand.source or {}),
                                sources=[_ref(cand.source or {})], mentions=1, history=fact.history,
                                ledger_id=row["id"], rule=cand.rule))
        return row

    def _retracted_by_value(self, cand: FactCandidate) -> FactCandidate:
        """"Forget what I said about Madrid": no key is "madrid", but the one
        fact set to Madrid in this conversation is what was said about it."""
        known = self.knowledge.facts.get(cand.key)
        if known is not None and known.live:
            return cand
        session = (cand.source or {}).get("session_id")
        held = [k for k in self.knowledge.keys_holding(cand.key)
                if any(s.get("session_id") == session for s in self.knowledge.facts[k].sources)]
        return replace(cand, key=held[0]) if len(held) == 1 else cand

    def _retractable(self, cand: FactCandidate) -> bool:
        """A retraction takes back a value said in its own conversation; one
        said elsewhere ("don't change X" a week later) is kept as it is."""
        fact = self.knowledge.facts.get(cand.key)
        session = (cand.source or {}).get("session_id")
        return fact is not None and fact.live and any(s.get("session_id") == session for s in fact.sources)

    def _retract(self, cand: FactCandidate, index: int) -> dict:
        """Back to the value before the one taken back; with none before it,
        the retraction removes the fact (a DELETE only when deletes are on)."""
        fact = self.knowledge.facts[cand.key]
        cand = replace(cand, type=fact.type, label=fact.label)     # the fact taken back keeps what it is
        before = fact.history[0] if fact.history and not fact.history[0].get("deleted") else None
        if before is None:
            return self._delete(replace(cand, delete=True, retract=False), index)[0]
        row = self._supersede(replace(cand, value=before["value"], replaces=fact.value), cand.key, index, fact)
        row["reason"] = f"retracted: back to the value before ({before['value']})"
        return row

    def _delete(self, cand: FactCandidate, index: int) -> list[dict]:
        if cand.replaces:
            return self._delete_value(cand, index)
        keys = [cand.key] if cand.key in self.knowledge.facts else []
        if cand.prefix:
            keys += sorted(k for k in self.knowledge.facts if k.startswith(cand.key + " "))
        live = [k for k in keys if self.knowledge.facts[k].live]
        if not live:
            return [self._row("NONE", cand, cand.key, index, None, None, [], "removal of a fact not known")]
        return self._tombstone(cand, index, live)

    def _tombstone(self, cand: FactCandidate, index: int, live: list[str]) -> list[dict]:
        if not self.allow_delete:
            return [self._row("NONE", cand, k, index, self.knowledge.facts[k].value, None, [],
                              "the source removes it; DELETE is off (sweep --allow-delete)") for k in live]
        rows = []
        for k in live:
            fact = self.knowledge.facts[k]
            row = self._row("DELETE", cand, k, index, fact.value, None, fact.sources, "the source removes it")
            self.knowledge._unindex(fact)
            fact.status, fact.ledger_id = "deleted", row["id"]
            fact.history.insert(0, {"value": fact.value, "sources": fact.sources,
                                    "until": (cand.source or {}).get("ts"), "deleted": True})
            del fact.history[MAX_HISTORY:]
            rows.append(row)
        return rows

    def _delete_value(self, cand: FactCandidate, index: int) -> list[dict]:
        """A removal that names the value it removes ("I left Acme", "I no
        longer use vim"): the live fact holding that value goes, under its
        own key or under another of the same type ("I left Lisbon" is the
        place lived in); a fact holding another value is left alone."""
        fact = self.knowledge.facts.get(cand.key)
        if fact is not None and fact.live and norm_value(fact.value) == norm_value(cand.replaces):
            return self._tombstone(cand, index, [cand.key])
        held = [k for k in self.knowledge.keys_holding(cand.replaces) if self.knowledge.facts[k].type == cand.type]
        if held:
            return self._tombstone(cand, index, held[:1])
        if fact is not None and fact.live:
            return [self._row("NONE", cand, cand.key, index, fact.value, None, [],
                              f"removes {cand.replaces}, but the known value is {fact.value}")]
        return [self._row("NONE", cand, cand.key, index, None, None, [], "removal of a fact not known")]

    def _row(self, action: str, cand: FactCandidate, key: str, index: int, old, new, targets: list[dict],
             reason: str) -> dict:
        src = cand.source or {}
        return {"id": row_id(action, key, src.get("id"), index, old, new, cand.key), "action": action, "key": key,
                "type": cand.type, "old": old, "new": new,
                "target_ids": [t.get("id") for t in targets], "target_seqs": [t.get("seq") for t in targets],
                "source_ids": [src.get("id")], "source_seqs": [src.get("seq")], "session_id": src.get("session_id"),
                "reason": reason, "rule": cand.rule, "importance": round(cand.importance, 3),
                "reconciler": RECONCILER, "version": RECONCILER_VERSION,
                "extractor": self.model if cand.rule == "llm" else self.extractor, "ts": src.get("ts")}


class RevertError(ValueError):
    """A decision that cannot be undone (as it stands): the message says why."""


def revert(knowledge: Knowledge, row: dict, ts: str) -> dict:
    """Undo one fact decision; returns the REVERT row (the knowledge is
    changed in place). Only a key's latest decision can be undone."""
    action, key = row.get("action"), row.get("key")
    fact = knowledge.facts.get(key)
    if action == "NONE":
        raise RevertError(f"ledger row {row['id']} decided NONE: it changed nothing, so there is nothing to revert")
    if action == "REVERT":
        raise RevertError(f"ledger row {row['id']} is itself a revert; a revert is not undone by another")
    if action not in STATE_ACTIONS:
        raise RevertError(f"ledger row {row['id']} ({action}) is not a fact decision")
    if fact is None or fact.ledger_id != row["id"]:
        latest = fact.ledger_id if fact is not None else None
        raise RevertError(f"ledger row {row['id']} is not the latest decision for {key!r}"
                          + (f" ({latest} is): revert that one first" if latest else " (the fact is gone)"))
    out = {"id": row_id("REVERT", row["id"], ts), "action": "REVERT", "reverts": row["id"], "key": key,
           "type": row.get("type"), "old": row.get("new"), "new": row.get("old"),
           "target_ids": list(row.get("source_ids") or []), "target_seqs": list(row.get("source_seqs") or []),
           "source_ids": [], "source_seqs": [], "session_id": row.get("session_id"),
           "reason": f"revert of {action} {row['id']}", "reconciler": RECONCILER, "version": RECONCILER_VERSION,
           "ts": ts}
    if action == "ADD":
        previous = fact.history[0] if fact.history and fact.history[0].get("deleted") else None
        if previous is None:
            knowledge.drop(key)
        else:                       # it had been deleted before this ADD: back to the tombstone
            fact.history.pop(0)
            knowledge.set(Fact(key=key, label=fact.label, type=fact.type, value=previous["value"],
                               importance=fact.importance, status="deleted", since=fact.since,
                               sources=previous.get("sources") or [], history=fact.history,
                               ledger_id=out["id"], rule=fact.rule))
        return out
    if action == "DELETE":
        if fact.history and fact.history[0].get("deleted"):
            fact.history.pop(0)
        fact.status, fact.ledger_id = "live", out["id"]
        knowledge.set(fact)
        return out
    # UPDATE / SUPERSEDE: the earlier value comes back
    earlier = fact.history.pop(0) if fact.history else {"value": row.get("old"), "sources": []}
    knowledge.set(Fact(key=key, label=fact.label, type=fact.type, value=earlier["value"],
                       importance=fact.importance, since=earlier.get("since", fact.since),
                       sources=earlier.get("sources") or [], history=fact.history, ledger_id=out["id"], rule=fact.rule))
    return out


def demotions(knowledge: Knowledge) -> dict[int, str]:
    """seq -> "UPDATE" (a superseded value's source) or "DELETE" (a
    tombstoned fact's source), for recall to rank such events lower."""
    marks: dict[int, str] = {}
    for fact in knowledge.facts.values():
        for earlier in fact.history:
            for s in earlier.get("sources") or ():
                if isinstance(s.get("seq"), int):
                    marks.setdefault(s["seq"], "DELETE" if earlier.get("deleted") else "UPDATE")
        if not fact.live:
            for s in fact.sources:
                if isinstance(s.get("seq"), int):
                    marks[s["seq"]] = "DELETE"
    # an event that still states a live value is not demoted for an older one
    for fact in knowledge.facts.values():
        if fact.live:
            for s in fact.sources:
                marks.pop(s.get("seq"), None)
    return marks
