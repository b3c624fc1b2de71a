"""`trace verify`: re-derive everything the log claims about itself.

Ground truth (segments/, artifacts/; a problem here is exit 5): every
line parses and is a sealed event; segment files are named by their first
seq; seq strictly increases across the whole log, and a seq skipped is a
missing event unless a loss record (appended by `trace verify --repair`)
names it; every `prev` is the hash of the line before and every `hash`
is the sha256 of the line's canonical form; every artifact an event
points to exists and matches its sha256. Problems name the segment and
line so a person can look.

The hash chain cannot see a tail cut off the log; the derived state can:
state.db and the indexes record how far the log had reached, and only ever
lag it. One that is ahead of the log is a record of events the log lost
(unless it is itself damaged: then it is no evidence).

Derived files (the indexes, state.db, cache/; exit 6 when only they are
wrong): each checked in full (stores/integrity/derived.py) and against
the log it covers. `trace verify --repair` rebuilds them."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from reducers.canonical import GENESIS, check_line
from reducers.event_schema import NOT_CARRIED, conform, event_problem
from stores.api.result import Result
from stores.errors import IntegrityError
from stores.log.event_log import LOST_EVENTS
from stores.ingest_state import recorded_seq, tally
from stores.integrity.derived import FULL, Damage, derived_damage
from stores.integrity.log_identity import another_log, recorded_identity
from stores.integrity.seals import LOST_KIND, LOST_SESSION
from stores.log.segments import NotASegment, RawLine, iter_log_lines, last_event, read_last_line, segment_name

_MAX_PROBLEMS = 100
EXIT_DERIVED = 6          # only derived files are damaged: the log is intact, `trace verify --repair` rebuilds them


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
class VerifyReport(Result):
    store: str
    ok: bool = True           # nothing wrong at all
    events: int = 0
    segments: int = 0
    artifacts: int = 0
    last_seq: int = 0
    problems: list[Problem] = field(default_factory=list)     # the log and artifacts: exit 5
    derived: list[Problem] = field(default_factory=list)      # derived files only: exit 6
    notes: list[str] = field(default_factory=list)
    malformed: int = 0        # sealed lines whose fields break the event schema (an older writer's)
    lost: list[tuple[int, int]] = field(default_factory=list)  # seqs missing and not acknowledged
    damage: list[Damage] = field(default_factory=list)        # what a repair discards and rebuilds

    def fail(self, segment: str, line: int, problem: str) -> None:
        self.ok = False
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(Problem(segment, line, problem))

    def fail_derived(self, where: str, problem: str) -> None:
        self.ok = False
        if len(self.derived) < _MAX_PROBLEMS:
            self.derived.append(Problem(where, 0, problem))

    def add_damage(self, damage: Damage) -> None:
        """A derived file a repair discards and rebuilds, and the problem it is."""
        self.damage.append(damage)
        self.fail_derived(damage.where, f"{damage.why}; `trace verify --repair` rebuilds it from the log")

    @property
    def log_ok(self) -> bool:
        return not self.problems

    @property
    def status(self) -> str:
        return "ok" if self.ok else "failed" if self.problems else "derived"

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 5 if self.problems else EXIT_DERIVED

    def to_dict(self) -> dict:
        """What `trace verify` prints: the verdict, counts and each problem as a line."""
        return {"ok": self.ok, "status": self.status, "events": self.events, "segments": self.segments,
                "artifacts": self.artifacts, "last_seq": self.last_seq,
                "problems": [str(p) for p in self.problems], "derived": [str(p) for p in self.derived]}


def verify(store, check_artifacts: bool = True, check_indexes: bool = True) -> VerifyReport:
    report = VerifyReport(store=str(store.dir))
    if not store.exists():
        reached = max([recorded_seq(store.dir), *(s.last_seq for s in _recorded_seals(store.dir).values())])
        if reached > 0:                   # state.db remembers a log: segments/ was removed, not never made
            report.fail("segments/", 0, f"is missing, but events up to seq {reached} were recorded; restore "
                                        f"segments/ from a backup, or `trace verify --repair` to record the loss")
        else:
            report.notes.append("no store here yet: nothing to verify")
        return report
    try:
        segments = store.segments()
    except NotASegment as exc:            # a segment's name on a directory: nothing past it can be read
        report.fail(f"segments/{exc.name}", 0, exc.why)
        return report
    if check_indexes:
        # SQLite (a WAL database) and Tantivy write even to be read: in a store
        # this user cannot write their refusals would read as damage.
        from stores.integrity.access import require_writable
        require_writable(store.dir)
    # A state.db copied from another store: its seals and counts are that log's, no evidence about this one.
    foreign = another_log(store.dir, recorded_identity(store.dir))
    walk = _LogWalk(report, segments, {} if foreign else _recorded_seals(store.dir))
    artifact_ids, log_end = walk.run()
    found = [Damage("state", "state.db", foreign)] if foreign else []
    if check_indexes:
        found += derived_damage(store.dir, FULL)
        if all(d.part != "state" for d in found):
            found += _state_disagrees(store.dir, report.last_seq, walk.counts)
    for d in found:
        report.add_damage(d)
    tail_lost = _check_tail(store, report, log_end, check_indexes)
    if check_artifacts:
        _check_artifacts(store, report, artifact_ids)
    if check_indexes and not tail_lost:       # "run `trace reindex`" would hide the loss
        _check_indexes(store, report)
    _note_quarantine(store, report)
    return report


class _LogWalk:
    """One pass over every line of the log."""

    def __init__(self, report: VerifyReport, segments, seals: dict):
        self.report = report
        self.sealed = {s.last_seq: s for s in seals.values() if s.last_hash}   # seq -> the seal naming its hash
        self.segments = segments
        report.segments = len(segments)
        self.starts = {seg.path: seg.first_seq for seg in segments}
        self.counts: dict[tuple[str, str], list] = {}       # what state.db should count, from the log
        self.gaps: list[tuple[int, int, str, int]] = []    # (first, last, segment, line) of seqs skipped
        self.acknowledged: list[tuple[int, int, int]] = []  # (first, last, at seq) named by loss records

    def run(self) -> tuple[dict[str, tuple[str, int]], tuple[str, int]]:
        report = self.report
        prev_hash, prev_seq, current = GENESIS, 0, None
        artifact_ids: dict[str, tuple[str, int, bool]] = {}
        log_end = (self.segments[-1].path.name, 1) if self.segments else (segment_name(1), 1)

        def damaged(raw: RawLine) -> None:
            report.fail(raw.segment.name, raw.line_no, _why_not_an_event(raw.data))

        def torn(raw: RawLine) -> None:
            report.notes.append(f"{raw.segment.name}:{raw.line_no}: last line does not parse as an event (a torn "
                                f"write); never served, moved to quarantine/ by the next writer")
        for raw, event in iter_log_lines(self.segments, on_damaged=damaged, on_torn=torn):
            name, line = raw.segment.name, raw.line_no
            seq = event["seq"]
            report.events += 1
            if raw.segment != current:
                current = raw.segment
                if seq != self.starts[current]:
                    report.fail(name, line, f"segment is named for seq {self.starts[current]} but starts at seq {seq}")
            skipped = isinstance(seq, int) and seq > prev_seq + 1
            if not isinstance(seq, int) or seq <= prev_seq:
                report.fail(name, line, f"seq {seq} does not increase (previous {prev_seq})")
            elif skipped:
                self.gaps.append((prev_seq + 1, seq - 1, name, line))
            if event.get("prev") != prev_hash and not skipped:     # across a gap the link is with what is gone
                report.fail(name, line, "hash chain broken: prev is not the previous line's hash")
            self._check_shape(event, name, line)
            tally((conform(event),), self.counts)
            if not check_line(raw.data)[0]:
                report.fail(name, line, "content does not match its hash (line altered)")
            for artifact_id, carried in _artifact_ids(conform(event)):   # (a malformed reference is a shape note)
                if carried or artifact_id not in artifact_ids:
                    artifact_ids[artifact_id] = (name, line, carried)
            seal = self.sealed.get(seq)
            if seal is not None and event["hash"] != seal.last_hash:
                report.fail(name, line, f"event {seq} is not the one a writer sealed there (the log was rewritten "
                                        f"from here or before, hashes and all)")
            prev_hash, prev_seq = event["hash"], seq if isinstance(seq, int) else prev_seq
            log_end = (name, line)
        self._note_torn_bytes()
        report.last_seq = prev_seq
        self._judge_gaps()
        return artifact_ids, log_end

    def _check_shape(self, event: dict, name: str, line: int) -> None:
        shape = event_problem(event)
        if shape:
            self.report.malformed += 1
            if self.report.malformed <= _MAX_PROBLEMS:
                self.report.notes.append(f"{name}:{line}: {shape} (written before events were checked on the way "
                                         f"in; readers take it as its neutral value, and it stays as written)")
        meta = event.get("meta") if isinstance(event.get("meta"), dict) else {}
        if event.get("session_id") == LOST_SESSION and isinstance(meta.get("accepted"), list):
            self.report.notes.append(f"{name}:{line}: {event.get('text')}")
        lost = meta.get("lost")
        if (event.get("kind") == LOST_KIND and event.get("session_id") == LOST_SESSION and isinstance(lost, list)
                and len(lost) == 2 and all(type(x) is int for x in lost)):
            self.acknowledged.append((lost[0], lost[1], event["seq"]))

    def _judge_gaps(self) -> None:
        """A skipped seq is a missing event, unless a loss record names it."""
        for first, last, name, line in self.gaps:
            covering = [seq for a, b, seq in self.acknowledged if a <= first and last <= b]
            span = f"event {first} is" if first == last else f"events {first}..{last} are"
            if covering:
                self.report.notes.append(f"{span} missing, acknowledged by the loss record at seq {covering[0]}")
                continue
            self.report.lost.append((first, last))
            if line == 1 and first == 1:
                where = f"the first segment, segments/{segment_name(1)}, is missing"
            elif line == 1:
                where = f"a segment is missing before this one (segments/{segment_name(first)})"
            else:
                where = "lines were removed before this one"
            self.report.fail(name, line, f"{span} missing: {where}; restore segments/ from a backup, or "
                                         f"`trace verify --repair` to record the loss and go on")

    def _note_torn_bytes(self) -> None:
        if self.segments:
            seg = self.segments[-1]
            _, _, end = read_last_line(seg.path, skip_torn=False)
            size = seg.path.stat().st_size
            if size > end:
                self.report.notes.append(f"{seg.path.name}: {size - end} bytes after the last newline (a torn "
                                         f"write); never served, moved to quarantine/ by the next writer")


def _recorded_seals(store_dir: Path) -> dict:
    """The seals writers recorded in state.db (read-only; none when it is
    missing or unreadable: then they vouch for nothing)."""
    import sqlite3

    from stores.integrity.derived import state_damage
    from stores.integrity.seals import Seal
    path = store_dir / "state.db"
    if not path.is_file() or state_damage(store_dir, FULL):
        return {}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT first_seq, size, mtime_ns, ctime_ns, ino, last_seq, last_hash FROM seals")
            return {row[0]: Seal(*row) for row in rows}
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def _state_disagrees(store_dir: Path, last_seq: int, counts: dict[tuple[str, str], list]) -> list[Damage]:
    """state.db's counters against the log's, when it says it has seen it all."""
    import sqlite3
    path = store_dir / "state.db"
    if not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE name='keys_seq'").fetchone()
            if not row or int(row[0]) != last_seq:
                return []                          # lagging (or ahead: the tail check's finding)
            recorded = {(s, k): [n, t] for s, k, n, t in db.execute(
                "SELECT session_id, kind, events, tokens FROM counts")}
        finally:
            db.close()
    except (sqlite3.Error, ValueError) as exc:
        return [Damage("state", "state.db", f"cannot be read ({exc})")]
    expected = {group: c[:2] for group, c in counts.items()}
    if recorded != expected:
        wrong = sorted(set(recorded) ^ set(expected) | {g for g in recorded if recorded[g] != expected.get(g)})
        return [Damage("state", "state.db", f"its counts disagree with the log (session {wrong[0][0]!r}, "
                                            f"kind {wrong[0][1]!r})")]
    return []


def _artifact_ids(event: dict):
    """(id, whether the event carried its content) of each artifact it names."""
    art = event.get("artifact")
    if isinstance(art, dict) and art.get("id"):
        yield str(art["id"]), art.get(NOT_CARRIED) is not True
    meta = event.get("meta") if isinstance(event.get("meta"), dict) else {}
    attachments = meta.get("attachments")
    for att in attachments if isinstance(attachments, list) else ():     # images and documents kept whole
        if isinstance(att, dict) and att.get("id"):
            yield str(att["id"]), att.get(NOT_CARRIED) is not True


def _check_artifacts(store, report: VerifyReport, artifact_ids: dict[str, tuple[str, int, bool]]) -> None:
    arts = store.artifacts
    uncarried = 0
    for artifact_id, (name, line, carried) in artifact_ids.items():
        try:
            why = arts.check(artifact_id)
        except Exception as exc:          # a malformed id in a line is itself a finding
            why = str(exc)
        if why == "is missing" and not carried:
            uncarried += 1                # imported without its content, as the ingest warned
            continue
        report.artifacts += 1
        if why:
            report.fail(name, line, f"artifact {artifact_id[:16]}… {why}")
    if uncarried:
        report.notes.append(f"{uncarried} artifact(s) named by imported events were never in this store "
                            f"(exported without their content); ingest their export with its artifacts to add them")


def _check_tail(store, report: VerifyReport, log_end: tuple[str, int], with_indexes: bool) -> bool:
    """Fail (and return True) when state.db or an index recorded events past
    the log's end. They are written after the log and only ever lag it, so
    being ahead means the log's tail was cut off (a missing/older derived
    file is normal: it catches up; a damaged one is no evidence)."""
    broken = {d.part for d in report.damage}
    reached = {"state.db": recorded_seq(store.dir)} if "state" not in broken else {}
    watermarks = _index_watermarks(store.dir) if with_indexes else {}
    reached.update({what: seq for what, (part, seq) in watermarks.items() if part not in broken})
    if not reached:
        return False
    log_seq = report.last_seq
    if max(reached.values()) > log_seq:
        # Readers take no lock: a writer may have appended (and recorded)
        # since the scan, so judge against the log as it is now.
        try:
            now = last_event(store.segments_dir)
        except IntegrityError:
            now = None
        log_seq = max(log_seq, now["seq"] if now else 0)
    if reached.get("state.db", log_seq + 1) <= log_seq and _state_is_this_logs(store.dir):
        # state.db, recorded for this very log, has not seen past its end:
        # an index that has is another log's (copied in), not a cut tail.
        for what, (part, seq) in watermarks.items():
            if reached.pop(what, 0) > log_seq:
                report.add_damage(Damage(part, f"{part}/", f"records events up to seq {seq}, which this log never "
                                                            f"had (copied from another store?)"))
    if not reached:
        return False
    top = max(reached.values())
    if top <= log_seq:
        return False
    names = [what for what, seq in reached.items() if seq == top]
    who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    missing = f"event {top} is" if top == log_seq + 1 else f"events {log_seq + 1}..{top} are"
    report.lost.append((log_seq + 1, top))
    report.fail(*log_end, f"log ends at seq {log_seq} but {who} recorded events up to seq {top}: the log's tail "
                          f"was removed ({missing} missing); restore segments/ from a backup, or `trace verify "
                          f"--repair` to record the loss (in the log and quarantine/{LOST_EVENTS}) and go on")
    return True


def _state_is_this_logs(store_dir: Path) -> bool:
    """Whether state.db recorded this log's own first event (a state.db from
    before that record vouches for nothing)."""
    from stores.integrity.log_identity import FIRST_HASH, current_identity
    recorded = recorded_identity(store_dir).get(FIRST_HASH)
    return recorded is not None and recorded == current_identity(store_dir).get(FIRST_HASH)


def _index_watermarks(store_dir: Path) -> dict[str, tuple[str, int]]:
    from stores.index.fulltext import FulltextIndex
    from stores.index.vectors import VectorIndex
    ft = FulltextIndex(store_dir)
    try:
        return {"the full-text index": ("fulltext", ft.watermark),
                "the vector index": ("vectors", VectorIndex(store_dir).watermark)}
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
    missing or holding other documents is derived damage; one that lags (an
    interrupted ingest, deferred embedding) only a note."""
    from stores.index.fulltext import SCHEMA_VERSION, FulltextIndex
    from stores.index.vectors import VectorIndex
    if any(d.part == "fulltext" for d in report.damage):
        return                                    # named already; opening it could crash the engine
    ft = FulltextIndex(store.dir)
    try:
        if ft.watermark < 0 or (ft.watermark > 0 and ft.open() is None):
            built = ft.built_schema()
            if report.events and built not in (None, str(SCHEMA_VERSION)):
                # an upgrade, not damage: the first recall rebuilds it by itself
                report.fail_derived("fulltext/", f"full-text index of an older TRACE (schema {built}, this one "
                                                 f"reads {SCHEMA_VERSION}); the next recall rebuilds it, or "
                                                 f"`trace verify --repair` (or `trace reindex`)")
            elif report.events:
                report.fail_derived("fulltext/", "full-text index missing or unreadable; `trace verify --repair` "
                                                 "(or `trace reindex`) rebuilds it")
        elif ft.watermark < report.last_seq:      # behind, not damaged: an interrupted ingest
            report.notes.append(f"full-text index covers seq {ft.watermark} of {report.last_seq} (an ingest "
                                f"was interrupted?); recall catches it up, or run `trace index`")
        elif ft.watermark > report.last_seq:      # a writer appended and indexed since the scan
            pass                                  # (_check_tail judged it): the counts cover different logs
        elif ft.num_docs() != report.events:
            report.fail_derived("fulltext/", f"full-text index holds {ft.num_docs()} documents for {report.events} "
                                             f"events; `trace verify --repair` (or `trace reindex`) rebuilds it")
    finally:
        ft.close()
    if any(d.part == "vectors" for d in report.damage):
        return
    vec = VectorIndex(store.dir)
    if vec.meta() and vec.watermark < report.last_seq:
        report.notes.append(f"vector index covers seq {max(vec.watermark, 0)} of {report.last_seq} "
                            f"(embedding deferred?); run `trace index`")


def _note_quarantine(store, report: VerifyReport) -> None:
    quarantine = store.dir / "quarantine"
    if not quarantine.is_dir():
        return
    lost = quarantine / LOST_EVENTS
    if lost.is_file():                        # a writer found the log cut short before
        for line in lost.read_text(errors="replace").splitlines()[-5:]:
            report.notes.append(f"earlier loss, noted in {lost}: {line}")
    held = sorted(p.name for p in quarantine.iterdir() if p.name != LOST_EVENTS)
    if held:
        report.notes.append(f"{len(held)} torn write(s) held in {quarantine} (never served): {', '.join(held[:5])}")
