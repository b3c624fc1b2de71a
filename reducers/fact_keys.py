"""Fact keys and values: what a fact is about, spelled one way.

A key names the thing a fact describes — a setting, the thing a decision
chose for, a file — so that a later value for the same thing is recognised
whatever the phrasing: `DATABASE_URL`, "the database URL" and
`database-url` are one key (`database url`). Values compare the same way
(case, quotes, backticks and spacing do not matter), but keep the spelling
they were written with for display."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FACT_TYPES = ("decision", "config", "implementation", "issue", "task_state", "architecture", "preference")
MAX_KEY_WORDS = 6
MAX_VALUE_CHARS = 120

_SEP = re.compile(r"[\s_\-]+")
_ANY_QUOTE = re.compile(r"[`'\"“”‘’*]")
_QUOTES = "`'\"*“”‘’"
_LEADING = re.compile(r"^(?:(?:the|a|an|our|my|your|its|their|this|that|these|those|new|current|default|"
                      r"whole|entire)\s+)+", re.I)
_TRAILING = re.compile(r"\s+(?:setting|settings|value|values|config|configuration|option|variable|env var|"
                       r"parameter|param|field)$", re.I)
PRONOUNS = frozenset("i me we us you he him she her it they them this that these those which what who "
                     "everything something anything nothing one here there".split())


@dataclass(slots=True)
class FactCandidate:
    """One fact as an extractor found it, before reconciliation."""
    type: str                     # one of FACT_TYPES
    key: str                      # normalised subject (norm_key)
    value: str                    # display spelling
    text: str                     # the sentence or line it came from (clipped)
    importance: float             # 0..1
    label: str = ""               # the subject as written
    replaces: str | None = None   # a value this one says it replaces ("instead of B", "from B to A")
    delete: bool = False          # the source explicitly removes or reverts the key
    prefix: bool = False          # with delete: every key under this one (an entity cancelled)
    rule: str = ""                # which rule found it
    source: dict = field(default_factory=dict)    # {id, seq, session_id, ts, kind}

    def as_json(self) -> dict:
        out = {"type": self.type, "key": self.key, "label": self.label or self.key, "value": self.value,
               "importance": round(self.importance, 3), "rule": self.rule, "text": self.text}
        if self.replaces:
            out["replaces"] = self.replaces
        if self.delete:
            out["delete"] = True
            if self.prefix:
                out["prefix"] = True
        return out


def clean(text: str) -> str:
    """Strip markdown emphasis, quotes and edge punctuation; collapse spaces."""
    text = " ".join(text.split())
    text = text.strip(_QUOTES + " .,;:!)(")
    return text.replace("**", "").replace("`", "")


def norm_key(subject: str) -> str:
    """`DATABASE_URL`, "the database URL", `database-url` -> "database url"."""
    s = _ANY_QUOTE.sub("", clean(subject))
    s = _LEADING.sub("", s)
    s = _TRAILING.sub("", s)
    s = _SEP.sub(" ", s.lower()).strip(" .:")
    return s


def norm_value(value: str) -> str:
    return _SEP.sub(" ", clean(value).lower()).strip()


def good_subject(key: str) -> bool:
    parts = key.split()
    if not parts or len(parts) > MAX_KEY_WORDS or len(key) > 80:
        return False
    if any(p in PRONOUNS for p in parts) or not any(c.isalnum() for c in key):
        return False
    return not key.isdigit()


def good_value(value: str) -> bool:
    v = norm_value(value)
    return bool(v) and v not in PRONOUNS and len(value) <= MAX_VALUE_CHARS and any(c.isalnum() for c in v) \
        and "[redacted" not in v


def clip(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
