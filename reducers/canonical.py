"""The canonical form of a log line and the hash chain over it.

Canonical bytes are orjson with sorted keys of the event *without* its
`hash`; the written line is those bytes with `"hash"` appended last, so a
line is hashed once on write and `verify` re-derives the same bytes from the
parsed line. `prev` (the previous line's hash) is inside the hashed bytes,
which chains every line to all lines before it."""
from __future__ import annotations

import hashlib
import re

import orjson

GENESIS = "0" * 64                      # `prev` of the very first line of a store
_OPTS = orjson.OPT_SORT_KEYS
_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_bytes(event: dict) -> bytes:
    if "hash" in event:
        event = {k: v for k, v in event.items() if k != "hash"}
    return orjson.dumps(event, option=_OPTS)


def line_hash(canonical: bytes) -> str:
    return hashlib.sha256(canonical).hexdigest()


def seal_line(event: dict) -> tuple[dict, bytes, str]:
    """Return (event as written, line bytes with trailing newline, hash) for
    an event that already carries `prev`. The event is written as given
    unless JSON cannot hold a value exactly (see `coerce`)."""
    try:
        body = orjson.dumps(event, option=_OPTS)
    except TypeError:
        event = coerce(event)
        body = orjson.dumps(event, option=_OPTS)
    digest = hashlib.sha256(body).hexdigest()
    return event, body[:-1] + b',"hash":"' + digest.encode() + b'"}\n', digest


def coerce(value):
    """The nearest value UTF-8 JSON can carry: integers beyond 64 bits become
    strings of their digits and lone surrogates U+FFFD. Only used when the
    exact value cannot be written at all."""
    if isinstance(value, dict):
        return {coerce(k) if isinstance(k, str) else str(k): coerce(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [coerce(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else str(value)
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _has_surrogate(value) else value
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def check_line(event: dict) -> tuple[bool, str]:
    """(hash matches, recomputed hash) for a parsed line."""
    digest = line_hash(canonical_bytes(event))
    return digest == event.get("hash"), digest
