"""Seals on the log: what each segment looked like when the last writer
closed, so the next one notices a log changed behind TRACE's back before
it appends to it.

The hash chain proves a line was not altered only to whoever re-reads the
whole log (`trace verify`); a writer cannot afford that on every cron run.
So each writer, once its appends are durable, records per segment its
size, mtime, ctime and inode and its last event's seq and hash (in
state.db). The next writer stats the segments (cheap) and re-reads only
those whose stat changed, checking their chain and that the recorded last
event is still there with the same hash. A crashed writer's appends (the
active segment grew, a new one appeared) pass that check; a line edited,
removed or reordered, a segment deleted or added does not, and the writer
refuses to append (exit 5) until `trace verify --repair` (or ingest
--accept-changed-log) acknowledges what was lost: a loss record is
appended that names the missing seqs, and those seqs are never used again.

With no seals (a store from before them, or a state.db rebuilt after
damage) a writer trusts the log as it finds it and seals it; verify still
checks every line."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from reducers.canonical import check_line
from stores.errors import IntegrityError
from stores.log.segments import iter_raw_lines, list_segments, read_last_line, sealed_event

LOST_KIND = "system"
LOST_SESSION = "trace"


@dataclass(frozen=True, slots=True)
class Seal:
    first_seq: int
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    last_seq: int
    last_hash: str

    def same_file(self, st: os.stat_result) -> bool:
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) == (
            self.size, self.mtime_ns, self.ctime_ns, self.ino)


@dataclass
class LogFindings:
    problems: list[str] = field(default_factory=list)
    lost: list[tuple[int, int]] = field(default_factory=list)     # seq ranges gone from the log

    def __bool__(self) -> bool:
        return bool(self.problems)


class LogChanged(IntegrityError):
    def __init__(self, findings: LogFindings):
        self.findings = findings
        shown = "; ".join(findings.problems[:3]) + (f"; and {len(findings.problems) - 3} more"
                                                    if len(findings.problems) > 3 else "")
        super().__init__(f"the log was changed outside TRACE ({shown}); nothing was appended. Run `trace verify` "
                         f"to see every problem, then `trace verify --repair` to record the loss and go on "
                         f"(or restore segments/ from a backup)")


def check_log(segments_dir: Path, tail_seq: int, keys_seq: int, seals: dict[int, Seal]) -> LogFindings:
    """What changed in the log since the seals were recorded (`keys_seq`:
    how far state.db says the log reached)."""
    found = LogFindings()
    disk = {s.first_seq: s.path for s in list_segments(segments_dir)}
    top = max([keys_seq, *(s.last_seq for s in seals.values())], default=0)
    if seals:
        last_sealed = max(seals)
        prev_hash = None
        for first in sorted(set(seals) | set(disk)):
            seal, path = seals.get(first), disk.get(first)
            if path is None:
                found.problems.append(f"segments/{path_name(first)} (events {first}..{seal.last_seq}) is missing")
                found.lost.append((first, seal.last_seq))
                prev_hash = seal.last_hash
                continue
            if seal is None and first < last_sealed:
                found.problems.append(f"segments/{path.name} appeared among the sealed segments")
                prev_hash = None
                continue
            st = os.lstat(path)
            if seal is not None and seal.same_file(st):
                prev_hash = seal.last_hash or prev_hash     # (an empty segment passes the chain on)
                continue
            problem, last_hash, lost = _check_segment(path, first, seal, prev_hash,
                                                      may_grow=seal is None or first == last_sealed)
            if problem:
                found.problems.append(problem)
            if lost:
                found.lost.append(lost)
            prev_hash = last_hash
    if tail_seq < top:
        reached = max((s.last_seq for s in seals.values()), default=keys_seq)
        found.problems.append(f"the log ends at seq {tail_seq} but events up to seq {max(reached, keys_seq)} "
                              f"were recorded")
        found.lost.append((tail_seq + 1, top))
    found.lost = _merged(found.lost)
    return found


def _check_segment(path: Path, first: int, seal: Seal | None, prev_hash: str | None,
                   may_grow: bool) -> tuple[str | None, str | None, tuple[int, int] | None]:
    """(what is wrong with one segment, its last hash, seqs gone from it):
    every line a sealed event whose hash holds, seqs consecutive from the
    name, each `prev` the line before's hash, the sealed last event still
    in place."""
    expect, last_hash, seen_sealed_last = first, prev_hash, False
    for raw in iter_raw_lines(path):
        event = sealed_event(raw.data)
        where = f"segments/{path.name}:{raw.line_no}"
        if event is None or not check_line(raw.data)[0]:
            return f"{where}: the line was altered", None, None
        if event.get("seq") != expect:
            return f"{where}: seq {event.get('seq')} where {expect} belongs (lines removed or reordered)", None, None
        if last_hash is not None and event.get("prev") != last_hash:
            return f"{where}: the hash chain is broken (a line before it was removed or altered)", None, None
        if seal is not None and expect == seal.last_seq:
            if event["hash"] != seal.last_hash:
                return f"{where}: event {expect} is not the one sealed there", None, None
            seen_sealed_last = True
        elif seal is not None and expect > seal.last_seq and not may_grow:
            return f"segments/{path.name}: events were added after it was sealed", None, None
        last_hash = event["hash"]
        expect += 1
    if seal is not None and not seen_sealed_last:
        if expect <= seal.last_seq:
            return (f"segments/{path.name}: events {expect}..{seal.last_seq} are gone from its end", last_hash,
                    (expect, seal.last_seq))
        return f"segments/{path.name}: changed after it was sealed", None, None
    return None, last_hash, None


def current_seals(segments_dir: Path, known: dict[int, Seal]) -> dict[int, Seal]:
    """The seals of the log as it is now (call once its appends are durable):
    a segment whose stat is unchanged keeps its seal; others are re-read
    from their last line."""
    out = {}
    for seg in list_segments(segments_dir):
        try:
            st = os.lstat(seg.path)
        except FileNotFoundError:
            continue
        old = known.get(seg.first_seq)
        if old is not None and old.same_file(st):
            out[seg.first_seq] = old
            continue
        line, _, _ = read_last_line(seg.path, skip_torn=False)
        if line is None and st.st_size == 0:          # emptied (its lines lost, acknowledged): sealed empty
            out[seg.first_seq] = Seal(seg.first_seq, 0, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                      seg.first_seq - 1, "")
            continue
        event = sealed_event(line) if line is not None else None
        if event is None:                              # damaged last line (verify names it): sealed as it is,
            event = _last_sealed_event(seg.path)       # by the last event in it, so an accepted change holds
        last_seq, last_hash = (event["seq"], str(event["hash"])) if event else (seg.first_seq - 1, "")
        out[seg.first_seq] = Seal(seg.first_seq, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                  last_seq, last_hash)
    return out


def _last_sealed_event(path: Path) -> dict | None:
    last = None
    for raw in iter_raw_lines(path):
        last = sealed_event(raw.data) or last
    return last


def path_name(first_seq: int) -> str:
    from stores.log.segments import segment_name
    return segment_name(first_seq)


def lost_record_text(first: int, last: int, why: str) -> str:
    span = f"event {first} is" if first == last else f"events {first}..{last} are"
    return (f"[{span} missing from this log ({why}); acknowledged by `trace verify --repair`: "
            f"these seqs are never used again]")


def accepted_record_text(problems: list[str]) -> str:
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return f"[the log was changed outside TRACE and accepted by `trace verify --repair`: {shown}]"


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[0] <= r[1]):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


# -- at a writer's open and close (stores/store.py) -----------------------------------

def check_before_append(store, log, state, accept: bool, lost: list[tuple[int, int]]) -> bool:
    """Refuse (LogChanged, exit 5) to append onto a log that no longer
    matches its seals; with `accept`, acknowledge what it lost (loss records
    naming the seqs, which are never used again) and trust it as it is.
    True when events were lost or lines changed: the indexes must be rebuilt
    (they still hold what was lost, or a line as it read before, and point
    into the log by offsets an edit of another length has moved)."""
    from stores.log.event_log import note_lost_events
    seals = state.seals()
    keys_seq = state.keys_seq
    if not seals and keys_seq == 0:
        keys_seq = _index_reach(store.dir)             # state.db is new: the index is the evidence left
    findings = check_log(store.segments_dir, log.tail.seq, keys_seq, seals)
    lost = sorted(set(lost) | set(findings.lost))
    if not findings and not lost:
        return False
    if not accept:
        raise LogChanged(findings)
    for problem in findings.problems:
        store.warn(f"accepted: {problem}")
    if lost:
        for first, last in lost:
            noted = note_lost_events(store.dir, first, last, "acknowledged by a writer told to accept the change")
        store.warn(f"events {', '.join(f'{a}..{b}' for a, b in lost)} are gone from the log; noted in {noted} "
                   f"and in the log itself, and their seqs will not be used again")
    state.reset()
    state.catch_up(store.segments_dir, log.tail.seq)
    _append_acknowledgements(store, log, state, lost, findings.problems)
    seal(store.segments_dir, state)
    return bool(lost or findings.problems)


def seal(segments_dir: Path, state) -> None:
    """Record the log's seals (once its appends are durable), and which log
    and store folder they are of."""
    from stores.integrity.log_identity import current_identity
    state.record_seals(current_seals(segments_dir, state.seals()))
    state.record_identity(current_identity(segments_dir.parent))


def _append_acknowledgements(store, log, state, lost: list[tuple[int, int]], problems: list[str]) -> None:
    """The log itself keeps what was accepted: a record per lost range
    (verify reads it as acknowledging the gap), and one naming the other
    changes, so a rewrite accepted once is still on record."""
    from reducers.drafts import Draft
    from stores.log.appender import Appender
    if lost:
        log.reserve(max(b for _, b in lost))
    after = log.tail.seq
    drafts = [Draft(kind=LOST_KIND, text=lost_record_text(a, b, "segments removed or cut"),
                    session_id=LOST_SESSION, key=f"trace/lost/{a}-{b}/after-{after}",
                    meta={"lost": [a, b]}) for a, b in lost]
    others = [p for p in problems if " is missing" not in p and "gone from" not in p
              and "the log ends at seq" not in p]
    if others:
        drafts.append(Draft(kind=LOST_KIND, text=accepted_record_text(others), session_id=LOST_SESSION,
                            key=f"trace/accepted/after-{after}", meta={"accepted": others[:100]}))
    if drafts:
        Appender(log, state, store.artifacts, redact_secrets=False).append_drafts(
            drafts, source_format="trace", source_path="trace verify --repair")


def _index_reach(store_dir: Path) -> int:
    """How far the full-text index says the log reached (0 when it is
    missing or damaged: then it vouches for nothing)."""
    from stores.index.fulltext import FulltextIndex
    from stores.integrity.derived import fulltext_damage
    if fulltext_damage(store_dir):
        return 0
    ft = FulltextIndex(store_dir)
    try:
        return max(ft.watermark, 0)
    finally:
        ft.close()
