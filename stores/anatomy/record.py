"""`trace anatomy record` as a function: request bodies in (files or
stdin; one JSON object, a JSON array, or JSON Lines), one anatomy record
per model call out, in the session given.

All or nothing: every record of every input is read and decomposed
before anything is written, so one that is no request body (no
`messages` or `input`) fails the command with its file and line and
writes nothing. HTTP exchanges of a capture that are no model call
(telemetry, auth) are passed over and counted."""
from __future__ import annotations

from dataclasses import dataclass, field

from reducers.anatomy.decompose import ACCEPTED_SHAPES, NotARequest, decompose, request_bodies
from reducers.anatomy.records import request_key, request_record
from reducers.formats.common import to_utc_iso
from stores.api.result import Result
from stores.anatomy.writer import Pending, spill_measure, write_records
from stores.ingest.big_lines import SpillRegistry
from stores.errors import TraceError, UsageError
from stores.log.event_log import utc_now_iso
from stores.paths import TMP, ensure_dir, private_umask
from stores.ingest.sources import MissingSource, SourceError, expand_inputs, read_records


@dataclass
class RecordResult(Result):
    """What `anatomy record` did: counts (`to_dict()`) and the records
    written (`records`, each with its internal fields; `public_records()`
    gives them as the command prints them)."""
    session_id: str
    calls: int = 0
    added: int = 0
    skipped: int = 0               # already recorded (same request, same occurrence)
    other_traffic: int = 0         # capture exchanges that are no model call
    unknown_models: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {"session_id": self.session_id, "calls": self.calls, "added": self.added, "skipped": self.skipped,
                "other_traffic": self.other_traffic, "unknown_models": self.unknown_models}

    def public_records(self) -> list[dict]:
        from reducers.anatomy.records import public
        return [public(r) for r in self.records]


def record_requests(store, paths: list[str], *, session: str, window: int | None = None) -> RecordResult:
    if not session:
        raise UsageError("--session is required: name the session these calls belong to")
    if not paths:
        raise UsageError("nothing to record: give FILE (request bodies) or - for stdin")
    if window is not None and window <= 0:
        raise UsageError(f"--window must be a positive number of tokens, got {window}")
    result = RecordResult(session)
    pending: list[Pending] = []
    occurrences: dict[str, int] = {}
    now = utc_now_iso()
    spills = SpillRegistry(store.dir / TMP)        # transcript text: inside the store, never the system temp
    try:
        for src in expand_inputs(paths, spool_dir=ensure_dir(store.dir / TMP)):
            if isinstance(src, MissingSource):
                raise TraceError(f"{src}")
            try:
                measure = spill_measure(spills)
                for item in read_records(src, spills):
                    if isinstance(item, SourceError):
                        # ingest waits for a file still being written; a record is one pass, so it is cut short
                        reason = ("the input ends inside a JSON value (cut short, or still being written); "
                                  "record it once it is whole" if item.pending else item.reason)
                        raise TraceError(f"{src.display}:{item.line}: {reason}; nothing was recorded")
                    line, rec = item
                    try:
                        bodies = list(request_bodies(rec))
                        anatomies = [(b, decompose(b, measure)) if b is not None else (None, None) for b in bodies]
                    except NotARequest as exc:
                        raise TraceError(f"{src.display}:{line}: not a model-call request: {exc}. Accepted: "
                                         f"{ACCEPTED_SHAPES}; nothing was recorded") from None
                    for body, anatomy in anatomies:
                        if anatomy is None:
                            result.other_traffic += 1
                            continue
                        n = occurrences[anatomy.request_hash] = occurrences.get(anatomy.request_hash, 0) + 1
                        ts = next((t for k in ("timestamp", "created_at")
                                   if (t := to_utc_iso(body.get(k)))), now)          # as the events have it
                        record = request_record(anatomy, key=request_key(session, anatomy.request_hash, n),
                                                session_id=session, origin="request", ts=ts,
                                                source={"path": src.display, "line": line})
                        pending.append(Pending(record, user_text=anatomy.user_text, window=window,
                                               window_source="option" if window else None))
                        result.calls += 1
            finally:
                if src.is_stdin:
                    src.path.unlink(missing_ok=True)
        if not pending:
            if result.other_traffic:
                raise TraceError("no model-call request found in the input (only other capture traffic); "
                                 "nothing was recorded")
            raise TraceError("the input is empty: no request body to record; give FILE (request bodies, one "
                             "JSON object, a JSON array or JSON Lines) or pipe them in")
        with private_umask():
            ensure_dir(store.dir)
            written = write_records(store.dir, pending, warn=store.warn)
    finally:
        spills.cleanup()
    result.added, result.skipped = written.added, written.skipped
    result.unknown_models = written.unknown_models
    result.records = written.records
    return result
