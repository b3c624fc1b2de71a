"""How a matched fact rule becomes a fact: the builders that turn a rule's
match into (key, value, replaces, delete), and how a captured value is
trimmed to the value itself (reducers/fact_rules.py holds the rules)."""
from __future__ import annotations

import re

from reducers.fact_keys import REFERENTS, clean, norm_key, norm_value, headed_by_setting_noun, tidy_subject
from reducers.fact_shapes import CHANGE_VERB, SUBJECT_START, VALUE_END


_SENTENCE_END = re.compile(r"(?<=[^\s.])[.!?]\s+")       # "eu-west-1. ap-south-1 was considered"
_ADDRESS = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|~?/)\S", re.I)
AUXILIARY = re.compile(r"(?<!\s)(?:\s+(?:was|were|got|is|are|has|have|had|been|just|now|already|finally|goes|go|went|gets|comes|came|\w+ly))+$",
                       re.I)


def subject_value(m: re.Match, sentence: str, trailing: re.Pattern | None = None):
    subj = SUBJECT_START.sub("", m.group("subj"))
    subj = tidy_subject(trailing.sub("", subj) if trailing else subj)
    if subj is None:
        return None
    old = m.groupdict().get("old")
    return norm_key(subj), value_of(m.group("val")), value_of(old) if old else None, False


def suffixed(built, noun: str):
    """A subject named by what it is about ("redis") keyed as its setting ("redis port")."""
    if built is None:
        return None
    key, *rest = built
    return (key if key.split()[-1:] == [noun] else f"{key} {noun}", *rest)


def named_setting(m: re.Match, sentence: str):
    """A label that names a setting in words ("Max connections"), not a
    file or an identifier listed with its path."""
    built = subject_value(m, sentence)
    if built is None or not headed_by_setting_noun(built[0]):
        return None
    if m.group("subj").strip().lower() in built[1].lower():
        return None                                  # ".env: apps/web/.env": a file listed with its path
    return built


def value_only(m: re.Match, sentence: str):
    """A choice without a named subject: keyed by what it replaces, else by
    the choice itself (a later "instead of" it can still find it)."""
    val = value_of(m.group("val"))
    subj = m.groupdict().get("subj")
    old = m.groupdict().get("old")
    old = value_of(old) if old else None
    if norm_value(val).split()[:1] and norm_value(val).split()[0] in REFERENTS:
        return None                                  # "go with my current flight": a reference, not a choice
    if subj:
        subj = tidy_subject(SUBJECT_START.sub("", subj))
        return (norm_key(subj), val, old, False) if subj else None
    if old:
        return norm_key(old), val, old, False
    return "decision: " + " ".join(_head(val, 4)), val, None, False


# What ends "we decided to <do something>": a clause, not a preposition
# ("deploy on Fridays only" is the decision, not "deploy").
_CLAUSE_END = re.compile(r"(?<!\s)\s+(?:and|so|because|since|which|but|so that|in order to|to make sure|unless|until|"
                         r"while|although|though)\b.*$", re.I)


def decided(m: re.Match, sentence: str):
    if not m.group("act"):
        return value_only(m, sentence)
    val = clean(_CLAUSE_END.sub("", m.group("val").strip()))
    if _A_CHANGE.match(val):
        return None                                  # "decided to switch X to B": the change rules read it
    return ("decision: " + " ".join(_head(val, 4)), val, None, False) if val else None


_A_CHANGE = re.compile(rf"^{CHANGE_VERB}\s+.+\s+(?:to|=)\s+\S", re.I)


def _head(value: str, n: int) -> list[str]:
    """The first words of a value, without a leading article or "to"."""
    parts = norm_value(value).split()
    while parts and parts[0] in ("the", "a", "an", "to"):
        parts.pop(0)
    return parts[:n]


def preference(m: re.Match, sentence: str):
    old = m.groupdict().get("old")
    if old:                       # "A over B": one key for the pair, whichever is preferred
        val = value_of(m.group("val"))
        pair = sorted([" ".join(_head(val, 6)), " ".join(_head(value_of(old), 6))])
        return "prefer: " + " vs ".join(pair), val, None, False
    val = clean(re.split(r",\s*(?:please|thanks|thank you)\b", m.group("val"), maxsplit=1, flags=re.I)[0])
    if not val or norm_value(val).split()[0] in REFERENTS:
        return None
    return "prefer: " + " ".join(_head(val, 5)), val, None, False


def always_never(m: re.Match, sentence: str):
    how = m.group("how").lower()
    how = "never" if how.startswith(("never", "don", "do not", "stop", "avoid")) else "always"
    action = clean(m.group("val"))                  # the whole instruction: "use uv for Python installs"
    return "prefer: " + " ".join(norm_value(action).split()[:4]), f"{how} {action}", None, False


def issue(m: re.Match, sentence: str):
    subj = norm_key(SUBJECT_START.sub("", m.group("subj")))
    val = m.groupdict().get("val")
    value = clean(val) if val else m.group("state").lower()        # a symptom is a phrase: kept whole
    return "issue: " + subj, value, None, False


def fixed(m: re.Match, sentence: str):
    return "issue: " + norm_key(m.group("subj")), "fixed", None, False


def todo(m: re.Match, sentence: str):
    what = value_of(m.group("val"))
    return "task: " + " ".join(norm_value(what).split()[:6]), "open", None, False


def not_done(m: re.Match, sentence: str):
    what = norm_key(SUBJECT_START.sub("", m.group("subj")))
    return "task: " + what, "not done yet", None, False


def removed(m: re.Match, sentence: str):
    return norm_key(SUBJECT_START.sub("", m.group("subj"))), "removed", None, True


def retracted(m: re.Match, sentence: str):
    subject = m.groupdict().get("subj") or m.groupdict().get("subj2") or ""
    return norm_key(SUBJECT_START.sub("", subject)), "retracted", None, False




def value_of(raw: str | None) -> str:
    if not raw:
        return ""
    raw = raw.strip()
    if raw[:1] in "`\"'" and raw[-1:] == raw[:1] and len(raw) > 1:
        return raw[1:-1].strip()
    raw = _SENTENCE_END.split(raw, maxsplit=1)[0]
    if _ADDRESS.match(raw):
        return clean(raw.split()[0])             # a URL or path is one token: what follows is prose
    return clean(VALUE_END.sub("", raw))
