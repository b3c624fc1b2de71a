"""Reading the log: segment files and the complete lines inside them.

Segments are named by the seq of their first line, zero-padded so a plain
sort orders them. Readers take no lock; a line is served only once its
trailing newline is on disk, so a reader racing a writer (or a crashed
writer's torn tail) never sees a partial event."""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

SEGMENT_DIGITS = 20
SEGMENT_SUFFIX = ".jsonl"
_READ_CHUNK = 1 << 20


def segment_name(first_seq: int) -> str:
    return f"{first_seq:0{SEGMENT_DIGITS}d}{SEGMENT_SUFFIX}"


@dataclass(frozen=True, slots=True)
class Segment:
    first_seq: int
    path: Path


def list_segments(segments_dir: Path) -> list[Segment]:
    try:
        names = os.listdir(segments_dir)
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        stem = name[: -len(SEGMENT_SUFFIX)]
        if name.endswith(SEGMENT_SUFFIX) and stem.isdigit() and len(stem) == SEGMENT_DIGITS:
            out.append(Segment(int(stem), segments_dir / name))
    out.sort(key=lambda s: s.first_seq)
    return out


def segments_from(segments: list[Segment], seq: int) -> list[Segment]:
    """The segments that can hold `seq` and everything after it."""
    firsts = [s.first_seq for s in segments]
    i = bisect.bisect_right(firsts, seq) - 1
    return segments[max(i, 0):]


@dataclass(slots=True)
class RawLine:
    segment: Path
    line_no: int          # 1-based line number inside the segment
    offset: int           # byte offset of the line start
    data: bytes           # without the trailing newline


def iter_raw_lines(path: Path, start_offset: int = 0, start_line: int = 1) -> Iterator[RawLine]:
    """Complete lines of one segment; bytes after the last newline (a write
    in progress, or a torn tail) are not yielded."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        f.seek(start_offset)
        offset, line_no, pending = start_offset, start_line, b""
        while True:
            chunk = f.read(_READ_CHUNK)
            if not chunk:
                return
            buf = pending + chunk if pending else chunk
            start = 0
            while True:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    break
                yield RawLine(path, line_no, offset, buf[start:nl])
                offset += nl + 1 - start
                line_no += 1
                start = nl + 1
            pending = buf[start:]


def iter_events(segments_dir: Path, start_seq: int | None = None,
                end_seq: int | None = None) -> Iterator[dict]:
    """Events in log order, optionally limited to [start_seq, end_seq]."""
    segments = list_segments(segments_dir)
    if start_seq is not None:
        segments = segments_from(segments, start_seq)
    for seg in segments:
        if end_seq is not None and seg.first_seq > end_seq:
            return
        for raw in iter_raw_lines(seg.path):
            event = orjson.loads(raw.data)
            seq = event.get("seq", 0)
            if start_seq is not None and seq < start_seq:
                continue
            if end_seq is not None and seq > end_seq:
                return
            yield event


def read_last_line(path: Path) -> tuple[bytes | None, int, int]:
    """(last complete line, its offset, size of the file up to and including
    its newline) — reads backwards, so it is cheap on a 64 MiB segment."""
    size = path.stat().st_size
    if size == 0:
        return None, 0, 0
    with open(path, "rb") as f:
        # Find the end: the last newline in the file.
        end = _rfind_newline(f, size)
        if end < 0:
            return None, 0, 0
        start = _rfind_newline(f, end) + 1
        f.seek(start)
        return f.read(end - start), start, end + 1


def _rfind_newline(f, before: int) -> int:
    """Offset of the last b'\\n' strictly before `before`, or -1."""
    pos = before
    while pos > 0:
        step = min(_READ_CHUNK, pos)
        f.seek(pos - step)
        chunk = f.read(step)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos - step + i
        pos -= step
    return -1


def read_event_at(segments_dir: Path, first_seq: int, offset: int) -> dict | None:
    """The event whose line starts at `offset` in segment `first_seq` (one
    seek and one line: how a search hit becomes the verbatim event)."""
    try:
        with open(segments_dir / segment_name(first_seq), "rb") as f:
            f.seek(offset)
            line = f.readline()
    except FileNotFoundError:
        return None
    if not line.endswith(b"\n"):
        return None
    return orjson.loads(line)
