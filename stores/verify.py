"""`trace verify`: re-derive everything the log claims about itself.

Every line parses and is a sealed event; segment files are named by their
first seq; seq strictly increases across the whole log; every `prev` is the
hash of the line before and every `hash` is the sha256 of the line's
canonical form; every artifact an event points to exists and matches its
sha256. Problems name the segment and line so a person can look."""
from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from reducers.canonical import GENESIS, check_line
from stores.segments import iter_raw_lines, read_last_line

_MAX_PROBLEMS = 100


@dataclass
class Problem:
    segment: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.segment}:{self.line}: {self.problem}"


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
    for n, seg in enumerate(segments):
        name = seg.path.name
        first = True
        for raw in iter_raw_lines(seg.path):
            try:
                event = orjson.loads(raw.data)
            except orjson.JSONDecodeError as exc:
                report.fail(name, raw.line_no, f"line does not parse ({exc})")
                continue
            if not isinstance(event, dict) or "seq" not in event or "hash" not in event:
                report.fail(name, raw.line_no, "not a sealed event (no seq/hash)")
                continue
            seq = event["seq"]
            report.events += 1
            if first and seq != seg.first_seq:
                report.fail(name, raw.line_no, f"segment is named for seq {seg.first_seq} but starts at seq {seq}")
            first = False
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
        if n == len(segments) - 1:
            _, _, end = read_last_line(seg.path)
            size = seg.path.stat().st_size
            if size > end:
                report.notes.append(f"{name}: {size - end} bytes after the last newline (a torn write); "
                                    f"never served, moved to quarantine/ by the next writer")
    report.last_seq = prev_seq
    if check_artifacts:
        arts = store.artifacts
        for artifact_id, (name, line) in artifact_ids.items():
            report.artifacts += 1
            try:
                why = arts.check(artifact_id)
            except Exception as exc:          # a malformed id in a line is itself a finding
                why = str(exc)
            if why:
                report.fail(name, line, f"artifact {artifact_id[:16]}…: {why}")
    if check_indexes:
        _check_indexes(store, report)
    quarantine = store.dir / "quarantine"
    if quarantine.is_dir():
        held = sorted(p.name for p in quarantine.iterdir())
        if held:
            report.notes.append(f"{len(held)} torn write(s) held in {quarantine} (never served): {', '.join(held[:5])}")
    return report


def _check_indexes(store, report: VerifyReport) -> None:
    """The derived indexes must cover the log: full text always (ingest
    indexes it before returning), vectors unless embedding was deferred."""
    from stores.fulltext import FulltextIndex
    from stores.vectors import VectorIndex
    ft = FulltextIndex(store.dir)
    try:
        if ft.watermark < 0:
            if report.events:
                report.fail("fulltext", 0, "full-text index missing or unreadable; `trace reindex` rebuilds it")
        elif ft.watermark < report.last_seq:
            report.fail("fulltext", 0, f"full-text index covers seq {ft.watermark} of {report.last_seq}; "
                                       f"run `trace index`")
        elif ft.num_docs() != report.events:
            report.fail("fulltext", 0, f"full-text index holds {ft.num_docs()} documents for {report.events} "
                                       f"events; run `trace reindex`")
    finally:
        ft.close()
    vec = VectorIndex(store.dir)
    if vec.meta() and vec.watermark < report.last_seq:
        report.notes.append(f"vector index covers seq {max(vec.watermark, 0)} of {report.last_seq} "
                            f"(embedding deferred?); run `trace index`")
