"""The canonical form of a log line and the hash chain over it.

A line is the event serialised once (orjson, keys in the order the writer
built them) with `"hash"` appended as its last member. The canonical form
is exactly those bytes without the hash member, so `verify` re-derives every
hash from the bytes on disk — no re-serialisation that could differ. `prev`
(the previous line's hash) is inside the hashed bytes, which chains every
line to all lines before it."""
from __future__ import annotations

import hashlib
import re

import orjson

GENESIS = "0" * 64                      # `prev` of the very first line of a store
_SURROGATE = re.compile("[\ud800-\udfff]")


_HASH_SUFFIX_LEN = len(b',"hash":"') + 64 + len(b'"}')
_HASH_PREFIX = b',"hash":"'


def seal_line(event: dict) -> tuple[dict, bytes, str]:
    """Return (event as written, line bytes with trailing newline, hash) for
    an event that already carries `prev`. The event is written as given
    unless JSON cannot hold a value exactly (see `coerce`)."""
    event, body, digest = seal(event)
    return event, body[:-1] + line_suffix(digest), digest


def seal(event: dict) -> tuple[dict, bytes, str]:
    """(event as written, its canonical bytes, their sha256). The line is
    `body[:-1] + line_suffix(digest)`; writers join the parts once per batch."""
    try:
        body = orjson.dumps(event)
    except TypeError:
        event = coerce(event)
        body = orjson.dumps(event)
    return event, body, hashlib.sha256(body).hexdigest()


def line_suffix(digest: str) -> bytes:
    return b',"hash":"' + digest.encode() + b'"}\n'


_DEEPEST = 100                          # orjson writes 255 levels; Python recursion allows ~1000 frames


def coerce(value, depth: int = 0):
    """The nearest value UTF-8 JSON can carry: integers beyond 64 bits become
    strings of their digits, lone surrogates U+FFFD, and what nests deeper
    than _DEEPEST levels its JSON text (a tool input 600 levels deep is kept,
    as text). Only used when the exact value cannot be written at all."""
    if isinstance(value, dict | list | tuple) and depth >= _DEEPEST:
        return deep_json(value)
    if isinstance(value, dict):
        return {coerce(k) if isinstance(k, str) else str(k): coerce(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [coerce(v, depth + 1) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else str(value)
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _has_surrogate(value) else value
    return value


class _Raw(str):
    """Text deep_json emits as it is (punctuation), not as a JSON value."""


def deep_json(value) -> str:
    """JSON text of a value nested however deep, with an explicit stack
    (the recursive encoders stop at a few hundred levels)."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item)
        elif isinstance(item, dict):
            parts: list = [_Raw("{")]
            for i, (k, v) in enumerate(item.items()):
                key = coerce(k) if isinstance(k, str) else str(k)
                parts += [_Raw(("," if i else "") + orjson.dumps(key).decode() + ":"), v]
            stack.extend(reversed(parts + [_Raw("}")]))
        elif isinstance(item, list | tuple):
            parts = [_Raw("[")]
            for i, v in enumerate(item):
                parts += ([_Raw(",")] if i else []) + [v]
            stack.extend(reversed(parts + [_Raw("]")]))
        else:
            out.append(orjson.dumps(coerce(item)).decode())
    return "".join(out)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def check_line(line: bytes) -> tuple[bool, str]:
    """(hash matches, recomputed hash) for a line's bytes (no newline)."""
    if len(line) <= _HASH_SUFFIX_LEN or line[-_HASH_SUFFIX_LEN:-66] != _HASH_PREFIX:
        return False, ""
    digest = hashlib.sha256(line[:-_HASH_SUFFIX_LEN] + b"}").hexdigest()
    return digest.encode() == line[-66:-2], digest
