"""Reading the log: segment files and the complete lines inside them.

Segments are named by the seq of their first line, zero-padded so a plain
sort orders them. Readers take no lock; a line is served only once its
trailing newline is on disk, so a reader racing a writer (or a crashed
writer's torn tail) never sees a partial event. The log's last line that
does not parse as a sealed event is a torn write too: passed over (the next
writer moves it to quarantine/). Such a line anywhere else is damage, and
readers say so (IntegrityError naming segment and line) instead of guessing."""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import orjson

from reducers.event_schema import conform
from stores.errors import IntegrityError

SEGMENT_DIGITS = 20
MAX_SEQ = (1 << 63) - 1          # seqs are SQLite integers: a name past this is no segment of ours
SEGMENT_SUFFIX = ".jsonl"
_READ_CHUNK = 1 << 20


def segment_name(first_seq: int) -> str:
    return f"{first_seq:0{SEGMENT_DIGITS}d}{SEGMENT_SUFFIX}"


@dataclass(frozen=True, slots=True)
class Segment:
    first_seq: int
    path: Path


def list_segments(segments_dir: Path) -> list[Segment]:
    """The segment files, in seq order. A segment's name on something that
    is not a regular file (a directory, a dangling or looping symlink, a
    pipe) is damage: its events cannot be read (IntegrityError)."""
    return [Segment(first, segments_dir / entry.name) for first, entry in _segment_entries(segments_dir)]


def _segment_entries(segments_dir: Path) -> list[tuple[int, os.DirEntry]]:
    """(first seq, directory entry) of each segment file, in seq order,
    checked as list_segments says (tail_seq wants only the last: no Path
    is made for the others)."""
    try:
        entries = list(os.scandir(segments_dir))
    except FileNotFoundError:
        return []
    out = []
    for entry in entries:
        name = entry.name
        stem = name[: -len(SEGMENT_SUFFIX)]
        if (name.endswith(SEGMENT_SUFFIX) and stem.isdigit() and len(stem) == SEGMENT_DIGITS
                and 0 < int(stem) <= MAX_SEQ):
            if not _regular_file(entry):
                raise NotASegment(entry)
            out.append((int(stem), entry))
    out.sort(key=lambda s: s[0])
    return out


def _regular_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:                       # a symlink loop
        return False


class NotASegment(IntegrityError):
    """A segment's name on something that is not a regular file."""

    def __init__(self, entry: os.DirEntry):
        try:
            directory = entry.is_dir()
        except OSError:
            directory = False
        what = ("a symlink that leads to no file" if entry.is_symlink() and not directory
                else "a directory" if directory else "not a regular file")
        self.name = entry.name
        self.why = (f"is {what}, not a segment file: the events it should hold cannot be read. Restore the "
                    f"file from a backup; or move it out of segments/, then `trace verify` names the events "
                    f"lost and `trace verify --repair` records the loss and goes on")
        super().__init__(f"{entry.path} {self.why}")


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


def sealed_event(data: bytes) -> dict | None:
    """The event a log line holds, or None when it is not one: it does not
    parse, or is not a JSON object with `seq` (a whole number a seq can
    be) and `hash`. The one rule for what a torn last line is, shared by
    readers, verify and the writer."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(event) is dict and "hash" in event and type(event.get("seq")) is int and 0 < event["seq"] <= MAX_SEQ:
        return event
    return None


def damaged_line(segment: Path, line_no: int) -> IntegrityError:
    return IntegrityError(f"segments/{segment.name}:{line_no}: this log line is not an event (the log is damaged); "
                          f"run `trace verify` to list every damaged line")


def misplaced_event(segment: Path, seq: int) -> IntegrityError:
    """An event an index points to is not at its place in the log: the log
    was cut (a copy taken mid-write, a restored backup) or a line changed
    after the index saw it."""
    return IntegrityError(f"segments/{segment.name}: event {seq} is not where the indexes recorded it (the log was "
                          f"cut or changed after they saw it); run `trace verify` to see what, then "
                          f"`trace verify --repair`")


def iter_log_lines(segments: list[Segment], wanted: Callable[[bytes], bool] | None = None, *,
                   ends_log: bool = True, on_damaged: Callable[[RawLine], None] | None = None,
                   on_torn: Callable[[RawLine], None] | None = None) -> Iterator[tuple[RawLine, dict]]:
    """(line, event) for the complete lines of `segments`, in order. Only lines
    whose bytes `wanted` accepts are parsed (a grep before the parse).

    A line that is not a sealed event is judged once the next line shows up:
    if none does and it is the last line of the log's last segment (`segments`
    run to the log's end unless `ends_log` is False) it is a torn write, passed
    over (`on_torn` hears of it). Anywhere else it is damage: `on_damaged`
    hears of it, or IntegrityError names it. No line is parsed twice."""
    suspect: RawLine | None = None
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        for raw in iter_raw_lines(seg.path):
            if suspect is not None:                 # a line follows it: not a torn tail
                _report_damage(suspect, on_damaged)
                suspect = None
            if wanted is not None and not wanted(raw.data):
                continue
            event = sealed_event(raw.data)
            if event is None:
                suspect = raw
                continue
            yield raw, event
        if suspect is not None and (i < last or not ends_log):    # a sealed segment's last line
            _report_damage(suspect, on_damaged)
            suspect = None
    if suspect is not None and on_torn is not None:
        on_torn(suspect)


def writer_pass(raw: RawLine) -> None:
    """How a writer rebuilding derived files meets a line that is not an
    event: passes over it. It only gets that far once the log matches the
    seals (stores/integrity/seals.py refuses a change nobody accepted), so
    such a line is damage `trace verify --repair` accepted; verify goes on
    naming it, readers showing the log (show, export) on refusing it."""


def _report_damage(raw: RawLine, on_damaged: Callable[[RawLine], None] | None) -> None:
    if on_damaged is None:
        raise damaged_line(raw.segment, raw.line_no)
    on_damaged(raw)


def iter_events(segments_dir: Path, start_seq: int | None = None,
                end_seq: int | None = None, *, conformed: bool = False,
                past_damage: bool = False) -> Iterator[dict]:
    """Events in log order, optionally limited to [start_seq, end_seq];
    `conformed` for readers that derive things from them (see
    reducers/event_schema.conform), else as written. A damaged line is an
    IntegrityError, or with `past_damage` passed over (see `writer_pass`)."""
    every = list_segments(segments_dir)
    segments = segments_from(every, start_seq) if start_seq is not None else every
    if end_seq is not None:                         # segments starting past the range are not opened
        segments = [s for s in segments if s.first_seq <= end_seq]
    ends_log = bool(segments) and segments[-1] is every[-1]
    damaged: list[RawLine] = []                     # judged by the next event's seq: in the range or before it

    def met(raw: RawLine) -> None:
        if not past_damage:
            damaged.append(raw)
    for _, event in iter_log_lines(segments, ends_log=ends_log, on_damaged=met):
        seq = event["seq"]
        if start_seq is not None and seq < start_seq:
            damaged.clear()                         # before the range: not this reader's to refuse
            continue
        if damaged:
            raise damaged_line(damaged[0].segment, damaged[0].line_no)
        if end_seq is not None and seq > end_seq:
            return
        yield conform(event) if conformed else event
        if end_seq is not None and seq >= end_seq:    # done: nothing past the range is read (or judged)
            return
    if damaged:
        raise damaged_line(damaged[0].segment, damaged[0].line_no)


def last_event(segments_dir: Path) -> dict | None:
    """The log's last event a reader may serve (a torn last line passed over),
    from the end of the last segment that holds one."""
    segments = list_segments(segments_dir)
    for seg in reversed(segments):
        line, start, _ = read_last_line(seg.path, skip_torn=seg is segments[-1])
        if line is not None:
            event = sealed_event(line)
            if event is None:
                raise damaged_line(seg.path, _line_number(seg.path, start))
            return event
    return None


def tail_seq(segments_dir: Path) -> int:
    """The seq of the log's last readable event (0 for an empty log): a
    damaged last line is passed over, not raised (indexes and the sweep
    only need how far the log reaches; verify names the damage)."""
    for _, entry in reversed(_segment_entries(segments_dir)):
        line, _, _ = read_last_line(entry.path)
        event = sealed_event(line) if line is not None else None
        if event is not None and type(event["seq"]) is int:
            return event["seq"]
    return 0


def read_last_line(path: Path | str, skip_torn: bool = True) -> tuple[bytes | None, int, int]:
    """(last complete line, its offset, size of the file up to and including
    its newline) — reads backwards, so it is cheap on a 64 MiB segment.
    With skip_torn (readers of the log's last segment), a last line that is
    not a sealed event is a torn write, passed over for the line before it;
    the writer's recovery and verify ask for the bytes as they are."""
    size = os.stat(path).st_size
    if size == 0:
        return None, 0, 0
    with open(path, "rb") as f:
        # Find the end: the last newline in the file.
        end = _rfind_newline(f, size)
        if end < 0:
            return None, 0, 0
        start = _rfind_newline(f, end) + 1
        f.seek(start)
        line = f.read(end - start)
        if skip_torn and sealed_event(line) is None:
            if start == 0:
                return None, 0, 0
            end = start - 1
            start = _rfind_newline(f, end) + 1
            f.seek(start)
            line = f.read(end - start)
        return line, start, end + 1


_FIRST_BACK_READ = 8_192


def _rfind_newline(f, before: int) -> int:
    """Offset of the last b'\\n' strictly before `before`, or -1. Reads
    backwards in steps that double from 8 KiB up to 1 MiB: a log line is
    usually far shorter, and recall asks for the tail's seq every query
    (two reads of a whole MiB each, for one line)."""
    pos, step = before, _FIRST_BACK_READ
    while pos > 0:
        step = min(step, pos)
        f.seek(pos - step)
        chunk = f.read(step)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos - step + i
        pos -= step
        step = min(step * 2, _READ_CHUNK)
    return -1


def read_event_at(segments_dir: Path, first_seq: int, offset: int) -> dict | None:
    """The event whose line starts at `offset` in segment `first_seq` (one
    seek and one line: how a search hit becomes the event), conformed: its
    readers (recall, context, the index) derive things from it."""
    try:
        with open(segments_dir / segment_name(first_seq), "rb") as f:
            f.seek(offset)
            line = f.readline()
            return _event_of_line(segments_dir, first_seq, offset, line, f.fileno())
    except FileNotFoundError:
        return None


def _event_of_line(segments_dir: Path, first_seq: int, offset: int, line: bytes, fd: int) -> dict | None:
    if not line.endswith(b"\n"):
        return None
    event = sealed_event(line)
    if event is None:
        # Every offset read here comes from a derived file (an index, state.db).
        # One that is not where a line starts (the file is damaged, or another
        # store's) says nothing about the log: no event there.
        if offset < 0 or (offset > 0 and os.pread(fd, 1, offset - 1) != b"\n"):
            return None
        path = segments_dir / segment_name(first_seq)
        raise damaged_line(path, _line_number(path, offset))
    return conform(event)


class SegmentReader:
    """read_event_at() for a reader of many events (recall reads ~20 a
    query): the segment files stay open between reads and a line is read
    with pread. Opening a segment and reading a buffered line cost ~40 µs
    an event, a pread on an open file ~4 µs. Segments only grow (or lose
    a torn tail); a file unlinked since it was opened (a failed batch's
    segment, made again under its name) is opened afresh."""

    FIRST_READ = 8_192
    KEPT = 64                     # open segment files at most

    def __init__(self, segments_dir: Path):
        self.dir = segments_dir
        self._files: dict[int, object] = {}

    def event_at(self, first_seq: int, offset: int) -> dict | None:
        try:
            f = self._file(first_seq)
            line = os.pread(f.fileno(), self.FIRST_READ, offset)
            end = line.find(b"\n")
            while end < 0:      # a long line: read as much again each time (one MiB at once cost every such hit a MiB copy)
                more = os.pread(f.fileno(), min(len(line), _READ_CHUNK), offset + len(line))
                if not more:
                    break
                end = more.find(b"\n")
                if end >= 0:
                    end += len(line)
                line += more
        except FileNotFoundError:
            return None
        return _event_of_line(self.dir, first_seq, offset, line[:end + 1] if end >= 0 else line, f.fileno())

    def _file(self, first_seq: int):
        f = self._files.get(first_seq)
        if f is not None and os.fstat(f.fileno()).st_nlink == 0:
            f.close()
            f = None
        if f is None:
            if len(self._files) >= self.KEPT:
                self.close()
            f = self._files[first_seq] = open(self.dir / segment_name(first_seq), "rb", buffering=0)
        return f

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files = {}


def _line_number(path: Path, offset: int) -> int:
    """1-based number of the line starting at `offset` (for error messages only)."""
    count = 0
    with open(path, "rb") as f:
        while offset > 0:
            chunk = f.read(min(_READ_CHUNK, offset))
            if not chunk:
                break
            count += chunk.count(b"\n")
            offset -= len(chunk)
    return count + 1
