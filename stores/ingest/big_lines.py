"""Decoding a JSON line too big to hold comfortably (a 100 MB tool output
on one line) with bounded memory.

The line is read in chunks straight from the file. Every string value
longer than SPILL_CHARS is decoded into a temporary file instead of memory
and replaced in the parsed record by a short marker string; the rest of the
record (small) is parsed normally. Parsers never see the difference: a
marker is an ordinary string. The append chokepoint recognises markers in an
event's text and streams the spilled content into the artifact store.
"""
from __future__ import annotations

import os
import re
import secrets
import tempfile
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import orjson

from stores.paths import tmp_prefix

SPILL_CHARS = 1 << 20          # strings longer than this (in raw bytes) go to a temp file
_CHUNK = 1 << 20
_MIN_LOOKAHEAD = 16            # enough for any escape sequence, even a surrogate pair
# A string body up to its closing quote or the end of the buffer (possessive: no backtracking).
# Tokens are plain runs, \uXXXX and two-byte escapes, so a match always ends
# on a token boundary (never inside an escape).
_BODY = re.compile(rb'(?:[^"\\]++|\\u[0-9a-fA-F]{4}|\\[^u])*+', re.DOTALL)
_HIGH_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}$")


class BigLineError(ValueError):
    pass


@dataclass(slots=True)
class Spill:
    path: str
    chars: int


class SpillRegistry:
    """Temp files of one ingest run and the markers that stand for them.

    They hold transcript text before redaction, so they live in `tmp_root`
    (the store's private tmp/, which the next writer empties if a crash
    left anything there); the folder is made only when a line spills."""

    def __init__(self, tmp_root: str | os.PathLike | None = None):
        self.nonce = secrets.token_hex(6)
        self.prefix = f"\x00TRACE-SPILL:{self.nonce}:"
        self.spills: dict[str, Spill] = {}
        self.tmp_root = tmp_root
        self.dir: str | None = None

    def new_file(self) -> tuple[str, BinaryIO]:
        if self.dir is None:
            if self.tmp_root is not None:
                os.makedirs(self.tmp_root, mode=0o700, exist_ok=True)
            self.dir = tempfile.mkdtemp(prefix=tmp_prefix("spill"), dir=self.tmp_root)
        marker = f"{self.prefix}{len(self.spills)}\x00"
        path = os.path.join(self.dir, f"{len(self.spills)}.txt")
        self.spills[marker] = Spill(path, 0)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        return marker, os.fdopen(fd, "wb")

    def holds_marker(self, text: str) -> bool:
        return bool(self.spills) and self.prefix in text

    def split(self, text: str) -> list[str | Spill]:
        """Text with markers -> pieces: literal strings and spills, in order."""
        out: list[str | Spill] = []
        rest = text
        while True:
            i = rest.find(self.prefix)
            if i < 0:
                if rest:
                    out.append(rest)
                return out
            j = rest.index("\x00", i + len(self.prefix)) + 1
            if i:
                out.append(rest[:i])
            out.append(self.spills[rest[i:j]])
            rest = rest[j:]

    def iter_text(self, spill: Spill, chunk_chars: int = _CHUNK) -> Iterator[str]:
        with open(spill.path, "r", encoding="utf-8", errors="surrogatepass", newline="") as f:
            while True:
                piece = f.read(chunk_chars)
                if not piece:
                    return
                yield piece

    def cleanup(self) -> None:
        for spill in self.spills.values():
            try:
                os.unlink(spill.path)
            except FileNotFoundError:
                pass
        if self.dir is not None:
            try:
                os.rmdir(self.dir)
            except OSError:
                pass
            self.dir = None


def decode_big_line(f: BinaryIO, length: int, registry: SpillRegistry):
    """Decode the JSON value in the next `length` bytes of `f` (one line,
    without its newline), spilling long strings. Raises BigLineError on
    malformed JSON or invalid UTF-8."""
    skeleton = bytearray()
    reader = _ChunkReader(f, length)
    while True:
        skeleton += reader.take_until_quote()              # structure between strings, in bulk
        if not reader.skip_one():
            break
        _string(reader, skeleton, registry)                # the opening quote was just skipped
    try:
        return orjson.loads(bytes(skeleton))
    except orjson.JSONDecodeError as exc:
        raise BigLineError(f"not valid JSON ({exc})") from None


class _ChunkReader:
    def __init__(self, f: BinaryIO, length: int):
        self.f, self.left = f, length
        self.buf, self.pos = b"", 0

    def peek(self) -> bytes:
        """The unread part of the buffer, topped up so it holds at least a
        whole escape sequence unless the line ends first."""
        rest = self.buf[self.pos:]
        if len(rest) < _MIN_LOOKAHEAD and self.left > 0:
            more = self.f.read(min(_CHUNK, self.left))
            self.left -= len(more)
            rest += more
            self.buf, self.pos = rest, 0
        return rest

    def advance(self, n: int) -> None:
        self.pos += n

    def skip_one(self) -> bool:
        if not self.peek():
            return False
        self.pos += 1
        return True

    def take_until_quote(self) -> bytes:
        out = bytearray()
        while True:
            rest = self.peek()
            if not rest:
                return bytes(out)
            q = rest.find(b'"')
            end = q if q >= 0 else len(rest)
            out += rest[:end]
            self.pos += end
            if q >= 0:
                return bytes(out)


def _string(reader: _ChunkReader, skeleton: bytearray, registry: SpillRegistry) -> None:
    """One JSON string body. Short strings are copied raw into the skeleton;
    past SPILL_CHARS the body is decoded piecewise into a temp file."""
    raw = bytearray()
    out = None
    marker = ""
    chars = 0
    while True:
        buf = reader.peek()
        if not buf:
            raise BigLineError("unterminated string")
        end = _BODY.match(buf).end()
        closed = end < len(buf) and buf[end:end + 1] == b'"'
        cut = end if closed else _safe_cut(buf, end)
        if cut == 0 and not closed:
            # A boundary-aligned buffer of >= _MIN_LOOKAHEAD bytes always holds a
            # whole token; none here means a bad escape or the line ended.
            raise BigLineError("malformed string escape" if len(buf) >= _MIN_LOOKAHEAD else "unterminated string")
        part = buf[:cut]
        reader.advance(cut + (1 if closed else 0))
        if out is None:
            raw += part
            if len(raw) > SPILL_CHARS and not closed:
                marker, out = registry.new_file()
                chars += _write_decoded(bytes(raw), out)
                raw = bytearray()
        else:
            chars += _write_decoded(part, out)
        if closed:
            break
    if out is None:
        skeleton += b'"' + raw + b'"'
        return
    out.close()
    registry.spills[marker].chars = chars
    skeleton += orjson.dumps(marker)


def _safe_cut(buf: bytes, end: int) -> int:
    """Where a piece of an unfinished string may end (`end` is already on an
    escape boundary): never between the halves of a surrogate pair or inside
    a multi-byte UTF-8 character."""
    cut = end
    if _HIGH_SURROGATE_ESCAPE.search(buf, max(cut - 6, 0), cut):
        cut -= 6                                         # keep a surrogate pair together
    i = cut
    while i > 0 and (buf[i - 1] & 0xC0) == 0x80:        # continuation bytes at the end...
        i -= 1
    if i > 0 and buf[i - 1] >= 0xC0:                     # ...after a lead byte: complete?
        lead = buf[i - 1]
        need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if cut - (i - 1) < need:
            cut = i - 1                                  # no: leave the character for later
    return cut


def _write_decoded(body: bytes, out: BinaryIO) -> int:
    try:
        text = orjson.loads(b'"' + body + b'"')
    except orjson.JSONDecodeError as exc:
        raise BigLineError("invalid UTF-8" if "utf-8" in str(exc).lower() else f"bad string ({exc})") from None
    out.write(text.encode("utf-8", "surrogatepass"))
    return len(text)
