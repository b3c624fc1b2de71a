"""`trace verify`: re-derive everything the log claims about itself.

Every line parses and is a sealed event; segment files are named by their
first seq; seq strictly increases across the whole log; every `prev` is the
hash of the line before and every `hash` is the sha256 of the line's
canonical form; every artifact an event points to exists and matches its
sha256. Problems name the segment and line so a person can look.

The hash chain cannot see a tail cut off the log; the derived state can:
state.db and the indexes record how far the log had reached, and only ever
lag it. One that is ahead of the log is a record of events the log lost."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from reducers.canonical import GENESIS, check_line
from stores.errors import IntegrityError
from stores.event_log import LOST_EVENTS
from stores.ingest_state import recorded_seq
from stores.segments import RawLine, iter_log_lines, last_event, read_last_line, segment_name

_MAX_PROBLEMS = 100


@dataclass
class Problem:
    segment: str          # a segment's file name; for a finding outside the log, the file at fault ("fulltext/")
    line: int             # 1-based line in the segment; 0 outside the log
    problem: str

    def __str__(self) -> str:
        """Relative to segments/ for a log line (`name:line: …`), else to the store."""
        return f"{self.segment}:{self.line}: {self.problem}" if self.line else f"{self.segment}: {self.problem}"

    def at(self, store_dir) -> str:
        """The full location: <store>/segments/<name>:<line>: …, or <store>/fulltext/: …"""
        return f"{store_dir}/segments/{self}" if self.line else f"{store_dir}/{self}"


@dataclass
class VerifyReport:
    store: str
    ok: bool = True
    events: int = 0
    segments: int = 0
    artifacts: int = 0
    last_seq: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, segment: str, line: int, problem: str) -> None:
        self.ok = False
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(Problem(segment, line, problem))


def verify(store, check_artifacts: bool = True, check_indexes: bool = True) -> VerifyReport:
    report = VerifyReport(store=str(store.dir))
    if not store.exists():
        report.notes.append("no store here yet: nothing to verify")
        return report
    segments = store.segments()
    report.segments = len(segments)
    prev_hash, prev_seq = GENESIS, 0
    artifact_ids: dict[str, tuple[str, int]] = {}
    starts = {seg.path: seg.first_seq for seg in segments}
    current = None
    log_end = (segments[-1].path.name, 1) if segments else (segment_name(1), 1)   # where a cut tail would start

    def damaged(raw: RawLine) -> None:
        report.fail(raw.segment.name, raw.line_no, _why_not_an_event(raw.data))

    def torn(raw: RawLine) -> None:
        report.notes.append(f"{raw.segment.name}:{raw.line_no}: last line does not parse as an event (a torn "
                            f"write); never served, moved to quarantine/ by the next writer")
    for raw, event in iter_log_lines(segments, on_damaged=damaged, on_torn=torn):
        name = raw.segment.name
        seq = event["seq"]
        report.events += 1
        if raw.segment != current:
            current = raw.segment
            if seq != starts[current]:
                report.fail(name, raw.line_no, f"segment is named for seq {starts[current]} but starts at seq {seq}")
        if not isinstance(seq, int) or seq <= prev_seq:
            report.fail(name, raw.line_no, f"seq {seq} does not increase (previous {prev_seq})")
        if event.get("prev") != prev_hash:
            report.fail(name, raw.line_no, "hash chain broken: prev is not the previous line's hash")
        matches, _ = check_line(raw.data)
        if not matches:
            report.fail(name, raw.line_no, "content does not match its hash (line altered)")
        art = event.get("artifact")
        if isinstance(art, dict) and art.get("id"):
            artifact_ids.setdefault(str(art["id"]), (name, raw.line_no))
        meta = event.get("meta") if isinstance(event.get("meta"), dict) else {}
        for att in meta.get("attachments") or ():         # images and documents kept whole
            if isinstance(att, dict) and att.get("id"):
                artifact_ids.setdefault(str(att["id"]), (name, raw.line_no))
        prev_hash, prev_seq = event["hash"], seq if isinstance(seq, int) else prev_seq
        log_end = (name, raw.line_no)
    if segments:
        seg = segments[-1]
        _, _, end = read_last_line(seg.path, skip_torn=False)
        size = seg.path.stat().st_size
        if size > end:
            report.notes.append(f"{seg.path.name}: {size - end} bytes after the last newline (a torn write); "
                                f"never served, moved to quarantine/ by the next writer")
    report.last_seq = prev_seq
    tail_lost = _check_tail(store, report, log_end, check_indexes)
    if check_artifacts:
        arts = store.artifacts
        for artifact_id, (name, line) in artifact_ids.items():
            report.artifacts += 1
            try:
                why = arts.check(artifact_id)
            except Exception as exc:          # a malformed id in a line is itself a finding
                why = str(exc)
            if why:
                report.fail(name, line, f"artifact {artifact_id[:16]}… {why}")
    if check_indexes and not tail_lost:       # "run `trace reindex`" would hide the loss
        _check_indexes(store, report)
    quarantine = store.dir / "quarantine"
    if quarantine.is_dir():
        lost = quarantine / LOST_EVENTS
        if lost.is_file():                        # a writer found the log cut short before
            for line in lost.read_text(errors="replace").splitlines()[-5:]:
                report.notes.append(f"earlier loss, noted in {lost}: {line}")
        held = sorted(p.name for p in quarantine.iterdir() if p.name != LOST_EVENTS)
        if held:
            report.notes.append(f"{len(held)} torn write(s) held in {quarantine} (never served): {', '.join(held[:5])}")
    return report


def _check_tail(store, report: VerifyReport, log_end: tuple[str, int], with_indexes: bool) -> bool:
    """Fail (and return True) when state.db or an index recorded events past
    the log's end. They are written after the log and only ever lag it, so
    being ahead means the log's tail was cut off (a missing/older derived
    file is normal: it catches up)."""
    reached = {"state.db": recorded_seq(store.dir)}
    if with_indexes:
        reached.update(_index_watermarks(store.dir))
    log_seq = report.last_seq
    if max(reached.values()) > log_seq:
        # Readers take no lock: a writer may have appended (and recorded)
        # since the scan, so judge against the log as it is now.
        try:
            now = last_event(store.segments_dir)
        except IntegrityError:
            now = None
        log_seq = max(log_seq, now["seq"] if now else 0)
    top = max(reached.values())
    if top <= log_seq:
        return False
    names = [what for what, seq in reached.items() if seq == top]
    who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    missing = f"event {top} is" if top == log_seq + 1 else f"events {log_seq + 1}..{top} are"
    report.fail(*log_end, f"log ends at seq {log_seq} but {who} recorded events up to seq {top}: the log's tail "
                          f"was removed ({missing} missing); restore segments/ from a backup (the next ingest "
                          f"notes the loss in quarantine/{LOST_EVENTS} and rebuilds the derived state)")
    return True


def _index_watermarks(store_dir: Path) -> dict[str, int]:
    from stores.fulltext import FulltextIndex
    from stores.vectors import VectorIndex
    ft = FulltextIndex(store_dir)
    try:
        return {"the full-text index": ft.watermark, "the vector index": VectorIndex(store_dir).watermark}
    finally:
        ft.close()


def _why_not_an_event(data: bytes) -> str:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return f"line does not parse ({exc})"
    return "not a sealed event (no seq/hash)"


def _check_indexes(store, report: VerifyReport) -> None:
    """The derived indexes must match the log they cover: a full-text index
    missing or holding other documents is a failure; one that lags (an
    interrupted ingest, deferred embedding) only a note."""
    from stores.fulltext import FulltextIndex
    from stores.vectors import VectorIndex
    ft = FulltextIndex(store.dir)
    try:
        if ft.watermark < 0:
            if report.events:
                report.fail("fulltext/", 0, "full-text index missing or unreadable; `trace reindex` rebuilds it")
        elif ft.watermark < report.last_seq:      # behind, not damaged: an interrupted ingest
            report.notes.append(f"full-text index covers seq {ft.watermark} of {report.last_seq} (an ingest "
                                f"was interrupted?); recall catches it up, or run `trace index`")
        elif ft.num_docs() != report.events:
            report.fail("fulltext/", 0, f"full-text index holds {ft.num_docs()} documents for {report.events} "
                                       f"events; run `trace reindex`")
    finally:
        ft.close()
    vec = VectorIndex(store.dir)
    if vec.meta() and vec.watermark < report.last_seq:
        report.notes.append(f"vector index covers seq {max(vec.watermark, 0)} of {report.last_seq} "
                            f"(embedding deferred?); run `trace index`")
