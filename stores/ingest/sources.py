"""Reading transcripts off disk (or stdin) into decoded records.

A source is JSONL (one record per line) or one whole JSON document. Lines
are decoded one at a time, so memory stays flat in file size; a line over
BIG_LINE_BYTES is decoded by stores.ingest.big_lines, which spills its long
strings to temp files. Lines that are not JSON or not UTF-8 come out as
`SourceError(line, reason)` for the caller to report as `file:line: reason`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

from reducers.torn_lines import salvage
from stores.ingest.big_lines import BigLineError, SpillRegistry, decode_big_line
from stores.ingest.tree import walk_tree
from stores.paths import tmp_prefix

BIG_LINE_BYTES = 8 << 20            # lines longer than this are decoded with bounded memory
WHOLE_DOC_MAX_BYTES = 512 << 20     # a whole-document .json larger than this is refused
COMPRESSED_SUFFIXES = (".jsonl.zst",)   # Codex compresses rollouts older than a week (cli 0.152+)
TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".traj", ".ndjson") + COMPRESSED_SUFFIXES
SNIFF_RECORDS = 20
SNIFF_MORE_RECORDS = 2000           # read on when the first ones cannot tell the format
_READ_CHUNK = 1 << 20
_BOM = b"\xef\xbb\xbf"               # a UTF-8 byte order mark: not part of the first record
_SPACE = re.compile(r"\s*")                     # between documents written one after another
_INVALID_UTF8 = "invalid UTF-8"                 # a bad line's reason; such a line is never a torn JSON line


@dataclass(slots=True)
class SourceError:
    line: int
    reason: str
    pending: bool = False   # an unfinished last line (the file is being written): not an error
    preamble: bool = False  # text a command printed before the document it wrote: reported, not an error


@dataclass(slots=True)
class Source:
    display: str            # what the user typed / the file path, for messages
    path: Path              # the file to read (a spooled temp file for stdin)
    source_id: str          # absolute path, or "-" for stdin (feeds derived session ids)
    is_stdin: bool = False
    compressed: bool = False  # zstd: read through a decompressed temp copy (decompressed())
    start: tuple[int, int] | None = None   # (byte offset, lines before it): read a grown JSONL file from there
    walked: bool = False    # found in a directory, not named: an empty one is not worth a line each cron run

    def fingerprint(self) -> tuple[int, int, str]:
        st = self.path.stat()
        with open(self.path, "rb") as f:
            head = hashlib.sha256(f.read(65536)).hexdigest()
        return st.st_size, st.st_mtime_ns, head


class MissingSource(Exception):
    pass


def expand_inputs(args: list, spool_dir: Path | None = None) -> Iterator[Source | MissingSource]:
    """Files as given, directories recursed (transcript-looking files only,
    sorted), `-` spooled from stdin (into `spool_dir`, the store's private
    tmp/). A path that is missing, or a directory that cannot be read, is
    yielded as MissingSource so the rest still ingest. A Source passes as
    it is (live follow names a rotated-away file by the path it had)."""
    for arg in args:
        if isinstance(arg, Source):
            yield arg
            continue
        if arg == "-":
            yield _spool_stdin(spool_dir)
            continue
        path = Path(arg).expanduser()
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            yield MissingSource(f"{arg}: no such file or directory")
            continue
        except OSError as exc:                     # a parent directory that may not be searched
            yield MissingSource(f"{arg}: cannot look at it ({exc.strerror or exc})")
            continue
        if stat.S_ISDIR(mode):
            yield from _walk(path)
        elif stat.S_ISREG(mode):
            yield Source(arg, path, str(path.resolve()), compressed=path.name.endswith(COMPRESSED_SUFFIXES))
        else:
            yield MissingSource(f"{arg}: not a regular file or directory")


def _walk(path: Path) -> Iterator[Source | MissingSource]:
    unreadable: list[OSError] = []
    for root, files in walk_tree(path, onerror=unreadable.append):
        while unreadable:                          # reported where the walk met them, not silently skipped
            exc = unreadable.pop(0)
            yield MissingSource(f"{exc.filename or root}: cannot read this directory ({exc.strerror or exc})")
        real_root = os.path.realpath(root)         # once per directory, not per file
        for name in files:
            if name.endswith(TRANSCRIPT_SUFFIXES) and not name.startswith("."):
                p = Path(root) / name
                try:
                    regular = stat.S_ISREG(os.stat(p).st_mode)
                except FileNotFoundError:
                    yield MissingSource(f"{p}: a link to a file that is not there")
                    continue
                except OSError as exc:
                    yield MissingSource(f"{p}: cannot look at it ({exc.strerror or exc})")
                    continue
                if not regular:                    # a FIFO or a device: opening it could block forever
                    continue
                real = os.path.realpath(p) if os.path.islink(p) else os.path.join(real_root, name)
                yield Source(str(p), p, real, compressed=name.endswith(COMPRESSED_SUFFIXES), walked=True)
    for exc in unreadable:                         # the last directories the walk could not read
        yield MissingSource(f"{exc.filename or path}: cannot read this directory ({exc.strerror or exc})")


def _spool_stdin(spool_dir: Path | None) -> Source:
    """Stdin is read once into a private temp file (inside the store: it
    holds the transcript unredacted): detection and --strict both need a
    second look at the data."""
    fd, name = tempfile.mkstemp(prefix=tmp_prefix("stdin"), suffix=".jsonl", dir=spool_dir)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, _READ_CHUNK)
    return Source("-", Path(name), "-", is_stdin=True)


class DamagedCompression(OSError):
    """A compressed transcript whose bytes are not zstd data (damaged, or
    another file under the name)."""


_FRAME_FEED = 64 << 10         # compressed bytes fed at a time: what one call expands to stays small


def decompressed(source: Source, spool_dir: Path | None = None) -> tuple[Source, bool]:
    """A zstd-compressed transcript as a private temp copy to read (streamed:
    memory stays flat), in `spool_dir` (the store's tmp/), and whether its
    data ended where a frame does; the caller deletes the copy. A file
    still being written (or cut short) ends inside a frame: the copy then
    holds what its complete blocks say. Keys and session ids come from the
    source itself, so the copy reads as the file it came from."""
    import zstandard
    fd, name = tempfile.mkstemp(prefix=tmp_prefix("zst"), suffix=".jsonl", dir=spool_dir)
    try:
        with os.fdopen(fd, "wb") as out, open(source.path, "rb") as raw:
            whole = _copy_frames(zstandard.ZstdDecompressor(), raw, out)
    except zstandard.ZstdError as exc:
        os.unlink(name)
        raise DamagedCompression(f"not readable zstd data: {exc}") from None
    except BaseException:
        os.unlink(name)
        raise
    return Source(source.display, Path(name), source.source_id), whole


def _copy_frames(dctx, raw, out) -> bool:
    """Every frame of `raw`, one after another, into `out`; False when the
    data stops inside a frame (the stream readers say nothing of that)."""
    obj, inside = dctx.decompressobj(), False
    while chunk := raw.read(_FRAME_FEED):
        while chunk:
            out.write(obj.decompress(chunk))
            inside = not obj.eof
            if inside:
                break
            chunk, obj = obj.unused_data, dctx.decompressobj()
    return not inside


def is_whole_document(path: Path) -> bool:
    """A pretty-printed or single JSON document rather than JSONL: the first
    line alone is not valid JSON, but the file starts like a document."""
    with open(path, "rb") as f:
        head = f.read(65536)
    stripped = head.removeprefix(_BOM).lstrip()
    if not stripped:
        return False
    if _preamble_end(stripped) not in (None, 0):      # a command's text, then a pretty-printed document
        return True
    if stripped[:1] not in (b"{", b"["):
        return False
    first_line = stripped.split(b"\n", 1)[0]
    if len(first_line) == len(stripped) and len(head) == 65536:
        return False            # one very long first line: JSONL with a big record
    try:
        orjson.loads(first_line)
        return False
    except orjson.JSONDecodeError:
        return True


def read_records(source: Source, spills: SpillRegistry) -> Iterator[tuple[int, object] | SourceError]:
    """(line number, decoded value) per record, or SourceError; blank lines
    are skipped. Re-callable: every call reads the file afresh.

    A file that starts like a document but does not read as one is JSONL
    whose first line is bad: its other lines are read, one by one."""
    if source.start is not None:
        yield from _read_jsonl(source.path, spills, *source.start)
        return
    if is_whole_document(source.path):
        items = _read_document(source.path)
        if not (len(items) == 1 and isinstance(items[0], SourceError) and _has_jsonl_records(source.path)):
            yield from items
            return
    yield from _read_jsonl(source.path, spills)


_PREAMBLE_LINES = 20
_DOCUMENT_START = re.compile(rb'[{\[](?=\s*(?:"|[{\[\]}]|$))', re.M)


def _preamble_end(data: bytes) -> int | None:
    """Where a pretty-printed document starts after a few lines of text a
    command printed on stdout before it (`opencode export > f` writes
    "Exporting session: ses_…", on some systems with no newline before
    the `{`; plugins add their own log lines): the offset of its opening
    bracket, or None when the text runs on or no bracket opens one."""
    match = _DOCUMENT_START.search(data)
    if match is None or data.count(b"\n", 0, match.start()) > _PREAMBLE_LINES:
        return None
    start = match.start()
    try:
        orjson.loads(data[start:].split(b"\n", 1)[0])
        return None                         # a JSON line: JSONL (whose first lines may be bad)
    except orjson.JSONDecodeError:
        return start


def _after_preamble(data: bytes) -> list | None:
    """A document after a command's text (`_preamble_end`): the text
    reported (not an error), then the document, numbered by its line.
    None unless the rest reads as one JSON document."""
    start = _preamble_end(data)
    if start is None:
        return None
    try:
        value = orjson.loads(data[start:])
    except orjson.JSONDecodeError:
        return None
    text = data[:start].decode("utf-8", "replace").strip()
    shown = text if len(text) <= 200 else text[:200] + "…"
    return [SourceError(1, f"{text.count(chr(10)) + 1} line(s) of text before the JSON document, not part "
                           f"of it: {shown!r}", preamble=True), (1 + data.count(b"\n", 0, start), value)]


def _has_jsonl_records(path: Path) -> bool:
    """Whether some line after the first is a JSON object or array by itself
    (of the first 1,000 lines): JSONL, not a broken document."""
    with open(path, "rb") as f:
        f.readline()
        for _, raw in zip(range(1000), f):
            raw = raw.strip()
            if raw[:1] in (b"{", b"[") and raw[-1:] in (b"}", b"]"):
                try:
                    orjson.loads(raw)
                    return True
                except orjson.JSONDecodeError:
                    continue
    return False


def _read_document(path: Path) -> list:
    size = path.stat().st_size
    if size > WHOLE_DOC_MAX_BYTES:
        return [SourceError(1, f"whole-document JSON of {size} bytes is too large; convert it to JSONL")]
    data = path.read_bytes().removeprefix(_BOM)
    try:
        return [(1, orjson.loads(data))]
    except orjson.JSONDecodeError as exc:
        after_text = _after_preamble(data)
        if after_text is not None:
            return after_text
        stream = _document_stream(data)
        if stream is not None:
            return stream
        try:                       # what orjson refuses but Python's json reads (NaN, a 400-digit number)
            return [(1, json.loads(data, parse_int=_whole_number))]
        except (ValueError, RecursionError):
            pass
        if _cut_short(data):         # a document still being written: read once it is whole
            return [SourceError(1, "the document ends too soon (still being written?); it will be read once "
                                   "complete", pending=True)]
        reason = _INVALID_UTF8 if "utf-8" in str(exc).lower() else f"not valid JSON ({exc})"
        return [SourceError(1, reason)]


def _document_stream(data: bytes) -> list[tuple[int, object]] | None:
    """Pretty-printed JSON objects written one after another (a "JSONL" file
    some tools indent), each numbered by the line it starts on; raw control
    characters inside strings are taken as written. None unless the whole
    file reads as two or more documents."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder(strict=False, parse_int=_whole_number)
    docs, pos, line = [], 0, 1
    while True:
        start = _SPACE.match(text, pos).end()
        line += text.count("\n", pos, start)
        if start == len(text):
            return docs if len(docs) >= 2 else None
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):   # not JSON; nested past the stack
            return None
        docs.append((line, value))
        line += text.count("\n", start, end)
        pos = end


def _read_jsonl(path: Path, spills: SpillRegistry, start: int = 0, lines_before: int = 0):
    with open(path, "rb") as f:
        f.seek(start)
        line_no = lines_before
        offset = start
        pending = b""
        while True:
            chunk = f.read(_READ_CHUNK)
            if not chunk and not pending:
                return
            buf = pending + chunk if pending else chunk
            if offset == 0 and buf.startswith(_BOM):    # Windows tools open UTF-8 files with one
                buf = buf[len(_BOM):]
            lines = buf.split(b"\n")
            pending = lines.pop()                   # after the last newline: the start of a line
            for raw in lines:
                line_no += 1
                item = _decode_line(raw, line_no)
                if isinstance(item, SourceError):
                    yield from _torn(raw, line_no, item)
                elif item is not None:
                    yield item
            offset += len(chunk)
            if not chunk:                       # last line without a newline
                line_no += 1
                item = _decode_line(pending, line_no)
                if isinstance(item, SourceError) and b"\0" in pending and not pending.strip(b"\0 \t\r"):
                    yield from _torn(pending, line_no, item)     # NULs are never a line still being written
                    return
                if isinstance(item, SourceError) and (line_no > 1 or _cut_short(pending)):
                    # A transcript being appended to (cron caught it mid-write): the
                    # line is read by the run that finds it complete. A first line
                    # counts only when it is valid JSON cut off (a new session's
                    # first record half-written), not a file that is not JSON.
                    item = SourceError(line_no, "last line is incomplete (no newline yet: still being "
                                                "written?); it will be read once complete", pending=True)
                if item is not None:
                    yield item
                return
            if len(pending) > BIG_LINE_BYTES:
                # A huge line: stream the rest of it from disk instead of buffering.
                line_no += 1
                line_start = offset - len(pending)
                line_len = _line_length(f, line_start)
                f.seek(line_start)
                yield from _decode_big(f, line_len, line_no, spills)
                f.seek(line_start + line_len + 1)
                offset = line_start + line_len + 1
                pending = b""


def restart_point(path: Path, before: int, resumes_at, min_back: int = 0,
                  window: int = 4 << 20) -> tuple[int, int] | None:
    """Where parsing of a grown JSONL file may start again: the start of the
    last line (at least `min_back` complete lines) before byte `before` that
    the format says nothing earlier is needed to read (`resumes_at(record)`),
    looked for within `window` bytes; as (offset, lines before it). None
    when there is none (the caller parses the whole file)."""
    low = max(0, before - window)
    with open(path, "rb") as f:
        f.seek(low)
        chunk = f.read(before - low)
        if not chunk.endswith(b"\n"):
            return None
        ends = _newlines(chunk)
        starts = ([0] if low == 0 else []) + [e + 1 for e in ends[:-1]]     # a line cut by `low` is not whole
        for start in reversed(starts[:max(0, len(starts) - min_back)]):
            line = chunk[start:chunk.index(b"\n", start)]
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if resumes_at(record):
                from stores.log.segments import _line_number     # the log's own line counter
                offset = low + start
                return offset, _line_number(path, offset) - 1
    return None


def _newlines(data: bytes) -> list[int]:
    out, i = [], data.find(b"\n")
    while i >= 0:
        out.append(i)
        i = data.find(b"\n", i + 1)
    return out


def _line_length(f, start: int) -> int:
    f.seek(start)
    length = 0
    while True:
        chunk = f.read(_READ_CHUNK)
        if not chunk:
            return length
        nl = chunk.find(b"\n")
        if nl >= 0:
            return length + nl
        length += len(chunk)


def _decode_big(f, length: int, line_no: int, spills: SpillRegistry):
    try:
        yield line_no, decode_big_line(f, length, spills)
    except BigLineError as exc:
        yield SourceError(line_no, str(exc))


def _decode_line(raw: bytes, line_no: int) -> tuple[int, object] | SourceError | None:
    """(line number, value), a SourceError, or None for a blank line."""
    try:
        return line_no, orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not raw.strip():
            return None
        msg = str(exc)
    if "utf-8" in msg.lower():
        return SourceError(line_no, _INVALID_UTF8)
    try:
        # What orjson refuses but Python's json reads: NaN/Infinity, lone
        # surrogate escapes. Keep the line rather than lose it.
        return line_no, json.loads(raw, parse_int=_whole_number)
    except (ValueError, RecursionError):
        return SourceError(line_no, f"not valid JSON ({msg.split(':', 1)[0]})")


def _torn(raw: bytes, line_no: int, error: SourceError):
    """A bad line as reported, or what a crashed write left of it: the
    loss reported, then the whole records it still holds."""
    found = salvage(raw, orjson.loads) if error.reason != _INVALID_UTF8 else None
    if found is None:
        yield error
        return
    records, lost = found
    yield SourceError(line_no, lost)
    for record in records:
        yield line_no, record


def _cut_short(raw: bytes) -> bool:
    """Whether `raw` is the start of a JSON value that ends too soon (what
    a writer leaves mid-line), as opposed to text that is not JSON."""
    for trim in range(4):                   # the cut may fall inside a multi-byte character
        try:
            text = raw[:len(raw) - trim].decode("utf-8")
        except UnicodeDecodeError:
            continue
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            return exc.pos >= len(text)
        return False
    return False


_INT_DIGITS = 4000                  # Python refuses to convert more than 4,300 digits


def _whole_number(digits: str):
    """An integer as JSON wrote it; one too long for Python to convert is
    kept as its digits (the event is written with the nearest value JSON
    can carry, as reducers/canonical.coerce does for big integers)."""
    return int(digits) if len(digits) <= _INT_DIGITS else digits


def sniff(records: Iterator[tuple[int, object] | SourceError], limit: int | None = None) -> tuple[list, list]:
    """(the next `limit` values, SNIFF_RECORDS by default, and every item read
    to find them), so detection reads a file once: parsing goes on with the
    items, then the rest."""
    limit = limit or SNIFF_RECORDS
    samples, head = [], []
    for item in records:
        head.append(item)
        if not isinstance(item, SourceError):
            samples.append(item[1])
            if len(samples) >= limit:
                break
    return samples, head
