"""Redaction of everything a draft carries, not only its text: the
append chokepoint (stores/log/appender.py) runs every draft through here, so
each string a parser copies into an event -- a hook's output kept in
`meta`, a repository URL, an API error's fields, a tool's input, an
imported event's `source` -- passes the redactor before it reaches the
log, the artifacts or the indexes. Pure functions.

Structured values (dicts and lists) are redacted string by string, keys
included, and then once more as JSON text, so that a key names its value
(`{"DB_PASSWORD": "…"}`, `{"env": {"NPM_TOKEN": "…"}}`). Media payloads
(base64 images) are left to reducers/media.redact_block."""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import Any, Callable

import orjson

from reducers.drafts import Draft
from reducers.media import redact_block
from reducers.redact import may_hold_secret_at, redact

_MAX_DEPTH = 64                 # deeper values are judged as JSON text only (no recursion limit hit)
_JSON = orjson.OPT_NON_STR_KEYS


def redact_value(value: Any) -> tuple[Any, int]:
    """(value with every string in it redacted, how many secrets). The
    value itself is never modified; an unchanged value comes back as is."""
    if isinstance(value, str):
        return redact(value)
    if not isinstance(value, (dict, list, tuple)) or not _finds_secret(value):
        return value, 0                                # the common case: one scan
    out, n = _walk(value, 0)
    try:
        text = orjson.dumps(out, option=_JSON).decode()
    except (TypeError, orjson.JSONEncodeError):
        return out, n
    # Keys give their values away: "password": "…" is a context only as JSON.
    redacted, more = redact(text)
    if more:
        try:
            return orjson.loads(redacted), n + more
        except orjson.JSONDecodeError:                 # cannot happen (replacements hold no quote); keep the walk
            pass
    return out, n


def _finds_secret(value: Any) -> bool:
    """Whether redaction finds a secret in the value written as JSON (the
    rules are tried only where a trigger word stands: one scan for most
    values). What cannot be written as JSON (a lone surrogate, an int past
    64 bits) is searched string by string."""
    try:
        text = orjson.dumps(value, option=_JSON).decode()
    except (TypeError, orjson.JSONEncodeError):
        return True
    return redact(text)[1] > 0


def _walk(value: Any, depth: int) -> tuple[Any, int]:
    if isinstance(value, str):
        return redact(value)
    if depth > _MAX_DEPTH:
        return value, 0
    if isinstance(value, dict):
        out, n = {}, 0
        for k, v in value.items():
            if isinstance(k, str):
                k, m = redact(k)
                n += m
                while k in out:                        # two keys redacted alike: keep both values
                    k += "'"
            out[k], m = _walk(v, depth + 1)
            n += m
        return (out, n) if n else (value, 0)
    if isinstance(value, (list, tuple)):
        items = [_walk(v, depth + 1) for v in value]
        n = sum(m for _, m in items)
        return ([v for v, _ in items], n) if n else (value, 0)
    return value, 0


_IDENTITY = ("session_id", "turn_id", "key", "uuid", "parent", "event_id")
_OTHERS = ("tool", "meta", "source", "artifact", "ts", "ingested_at")
_GATE_MAX = 64 * 1024           # longer texts skip the batch gate (no copy of megabytes): searched one by one


def redact_identities(drafts: list[Draft]) -> list[Draft]:
    """The drafts with secrets out of the strings that name them (session,
    turn, dedupe keys, source record id, event id). Done before dedupe, so
    that a re-ingest looks up the keys the log holds. An event id that held
    a secret is dropped: the log gives the event a new one. One trigger
    scan for the batch; only a draft it flags is searched."""
    names = ["\n".join([getattr(d, f) or "" for f in _IDENTITY] + d.merged_keys) for d in drafts]
    return [_redact_identity(d) if flagged else d for d, flagged in zip(drafts, may_hold_secrets(names))]


def _redact_identity(d: Draft) -> Draft:
    changes: dict[str, Any] = {}
    for field in _IDENTITY:
        value = getattr(d, field)
        if value:
            text, n = redact(value)
            if n:
                changes[field] = None if field == "event_id" else text
    merged = [redact(k)[0] for k in d.merged_keys]
    if merged != d.merged_keys:
        changes["merged_keys"] = merged
    return replace(d, **changes) if changes else d


def redact_drafts(drafts: list[Draft], spilled: Callable[[str], bool] | None = None) -> tuple[list[Draft], int]:
    """(the drafts with secrets out of every field, how many). `spilled`
    says whether a text holds spilled strings (stores/ingest/big_lines): such text
    is redacted as it streams to the artifact store, not here. One trigger
    scan over the batch's texts and fields decides which drafts are
    searched at all (most are not)."""
    texts, arts, others, unwritable = [], [], [], []
    for d in drafts:
        texts.append("" if spilled is not None and spilled(d.text) else d.text)
        arts.append(d.artifact_text or "")
        values = [getattr(d, field) for field in _OTHERS]
        try:
            others.append(orjson.dumps(values, option=_JSON).decode() if any(v is not None for v in values) else "")
            unwritable.append(False)
        except (TypeError, orjson.JSONEncodeError):  # a lone surrogate, an int past 64 bits: searched field by field
            others.append("")
            unwritable.append(True)
    flags = may_hold_secrets([*texts, *arts, *others])
    n = len(drafts)
    out, total = [], 0
    for i, d in enumerate(drafts):
        search_others = unwritable[i] or (flags[2 * n + i] and redact(others[i])[1] > 0)
        d, found = _redact_draft(d, texts[i], flags[i], flags[n + i], search_others)
        out.append(d)
        total += found
    return out, total


def may_hold_secrets(texts: list[str]) -> list[bool]:
    """Whether each text may hold a secret: the short ones by one joined
    trigger scan (a trigger position says which text it is in); a long one
    is simply searched (True)."""
    flags = [bool(t) and len(t) > _GATE_MAX for t in texts]
    short = [i for i, t in enumerate(texts) if t and len(t) <= _GATE_MAX]
    if short:
        starts, pos = [], 0
        for i in short:
            starts.append(pos)
            pos += len(texts[i]) + 1
        for at in may_hold_secret_at("\n".join(texts[i] for i in short)):
            flags[short[bisect_right(starts, at) - 1]] = True
    return flags


def _redact_draft(d: Draft, text: str, text_flag: bool, art_flag: bool, search_others: bool) -> tuple[Draft, int]:
    changes: dict[str, Any] = {}
    count = 0
    if d.media:
        media = [redact_block(b) for b in d.media]
        n = sum(m for _, m in media)
        if n:
            changes["media"], count = [b for b, _ in media], count + n
    if text_flag:
        redacted, n = redact(text)
        if n:
            changes["text"], count = redacted, count + n
    if art_flag:
        art_text, n = redact(d.artifact_text)
        if n:
            changes["artifact_text"], count = art_text, count + n
    if search_others:
        for field in _OTHERS:
            value = getattr(d, field)
            if value is not None:
                out, n = redact_value(value)
                if n:
                    changes[field], count = out, count + n
    if not count:
        return d, 0
    meta = changes.get("meta", d.meta) or {}
    if isinstance(meta, dict):
        before = meta.get("redacted")
        changes["meta"] = {**meta, "redacted": (before if isinstance(before, int) else 0) + count}
    if "text" in changes:
        changes["tokens"] = None                  # a count made before redaction (an imported event's) no longer holds
    if "artifact_text" in changes and d.artifact:
        changes["artifact"] = None                # content changed: re-derive the artifact
    return replace(d, merged_keys=list(d.merged_keys), **changes), count
