"""Secrets inside base64 payloads (an attached .env, a latin-1 log, a
binary with a key in its strings): the bytes are decoded and scanned, and
only a payload that held a secret is encoded again (with the secret
replaced); one that held none stays byte for byte.

The bytes are read as UTF-8 with undecodable bytes kept as lone
surrogates ("surrogateescape"), so text in any ASCII-compatible encoding
(UTF-8, latin-1, cp1252) and the ASCII strings inside a binary are seen
as text, and every byte outside a secret round-trips exactly. Not seen:
secrets in UTF-16/UTF-32 text, and in compressed or encrypted bytes (a
zip, a PNG's compressed chunks) -- their bytes hold no ASCII run.

A payload too big to hold is scanned as it streams (PayloadScan) and, if
it held a secret, streamed again encoded (redacted_base64)."""
from __future__ import annotations

import base64
import binascii
import codecs
import re
from typing import Iterable, Iterator

from reducers.redact import redact
from reducers.redact_stream import StreamRedactor

_SPACE = re.compile(r"\s+")
_CHUNK = 3 * 64 * 1024          # bytes encoded at a time (a multiple of 3: no padding mid-stream)


def decode_base64(body: str) -> bytes | None:
    """The bytes of standard base64 (line breaks allowed, padding optional);
    None when it is not base64."""
    compact = _SPACE.sub("", body)
    if len(compact) % 4 == 1:
        return None
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def redact_bytes(raw: bytes) -> tuple[bytes, int]:
    """(raw with every secret replaced, how many); bytes outside a secret kept."""
    text, n = redact(raw.decode("utf-8", "surrogateescape"))
    return (text.encode("utf-8", "surrogateescape"), n) if n else (raw, 0)


def redact_base64(body: str) -> tuple[str, int] | None:
    """base64 whose bytes are redacted (encoded again only when a secret
    was found; else `body` itself); None when `body` is not base64."""
    raw = decode_base64(body)
    if raw is None:
        return None
    out, n = redact_bytes(raw)
    return (base64.b64encode(out).decode("ascii"), n) if n else (body, 0)


class _Decoder:
    """base64 text pieces -> the text of their bytes (surrogateescape)."""

    def __init__(self):
        self._carry = ""
        self._text = codecs.getincrementaldecoder("utf-8")("surrogateescape")

    def feed(self, piece: str, final: bool = False) -> str:
        compact = self._carry + _SPACE.sub("", piece)
        cut = len(compact) if final else len(compact) - len(compact) % 4
        self._carry = compact[cut:]
        body = compact[:cut]
        if final and len(body) % 4 == 1:
            raise ValueError("not base64")
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True) if body else b""
        return self._text.decode(raw, final)


def _redacted_text(pieces: Iterable[str], redactor: StreamRedactor) -> Iterator[str]:
    decoder = _Decoder()
    for piece in pieces:
        yield redactor.feed(decoder.feed(piece))
    yield redactor.feed(decoder.feed("", final=True))
    yield redactor.close()


def secrets_in_base64(pieces: Iterable[str]) -> int | None:
    """How many secrets the bytes of a streamed base64 payload hold (memory
    bounded by the stream redactor's window); None when it is not base64."""
    redactor = StreamRedactor()
    try:
        for _ in _redacted_text(pieces, redactor):
            pass
    except (binascii.Error, ValueError):
        return None
    return redactor.count


def redacted_base64(pieces: Iterable[str]) -> Iterator[str]:
    """A streamed base64 payload with the secrets in its bytes replaced,
    encoded again (pieces already known to be base64)."""
    pending = b""
    for text in _redacted_text(pieces, StreamRedactor()):
        pending += text.encode("utf-8", "surrogateescape")
        if len(pending) >= _CHUNK:
            cut = len(pending) - len(pending) % 3
            yield base64.b64encode(pending[:cut]).decode("ascii")
            pending = pending[cut:]
    yield base64.b64encode(pending).decode("ascii")
