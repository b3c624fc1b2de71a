"""`trace ingest` as a function: sources in, one result per source out.

Every source is read, detected, parsed by its format's pure parser and fed
through the Appender chokepoint, under one writer lock. Bad lines are
reported as `file:line: reason` and the rest still ingests; with `strict`
a source with any bad line writes nothing. A file that has not changed
since it last ingested cleanly is skipped without parsing (cron re-ingests
every few minutes); so is one whose bad lines were reported once
already (`recheck` reads it again). One that grew, in a format that can
start mid-file (`resumes_at`: Claude Code), is parsed from a little before
where its last clean ingest ended."""
from __future__ import annotations

import errno
import os
import time
from dataclasses import asdict, dataclass, field
from itertools import chain
from typing import Callable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, Pending
from reducers.formats.registry import DETECTION_ORDER, detect_format, format_module, mismatched_format, undecided
from reducers.event_schema import draft_problem
from reducers.reconcile import AddAll, SizeAware
from reducers.redact import redact as redact_text
from reducers.timestamps import infer_times
from stores.anatomy.ingest_calls import collector_for, write_calls
from stores.api.result import Result
from stores.log.appender import FLUSH, Appender, AppendCounts
from stores.ingest.big_lines import SpillRegistry
from stores.errors import TraceError, UsageError
from stores.log.event_log import utc_now_iso
from stores.integrity.bad_records import MAX_PARSER_RESTARTS, BadLines, RecordFeed
from stores.paths import TMP, ensure_dir
from stores.working_state import STATE_FORMAT, WorkingStateTracker
from stores.ingest.sources import (SNIFF_MORE_RECORDS, DamagedCompression, MissingSource, Source, SourceError, decompressed,
                           expand_inputs, read_records, sniff)

DEFAULT_RECONCILE_BUDGET = 500_000
_STORE_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)   # the store, not the source, failed


@dataclass
class IngestResult(Result):
    source: str
    format: str | None = None
    session_id: str | None = None
    sessions: int = 0
    added: int = 0
    skipped: int = 0           # events already in the log
    ignored: int = 0           # source records read that made no event by design (bookkeeping, repeats)
    dropped: int = 0
    errors: int = 0
    states: int = 0            # task_state events written for sessions whose working state changed
    pending: int = 0           # an incomplete last line, left for the next run
    redacted: int = 0
    artifacts: int = 0
    anatomy: int = 0           # model-call records written (stores/anatomy/)
    unchanged: bool = False
    empty: bool = False        # nothing in it (no bytes, blank lines, an empty pipe): nothing found, no error
    error: str | None = None
    error_lines: list[str] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        out = asdict(self)
        out.pop("error_lines")
        if out["error"] is None:
            out.pop("error")
        return out


def reconciler_from_env():
    mode = os.environ.get("TRACE_RECONCILE", "").strip().lower()
    if mode in ("", "add", "none", "off"):
        return AddAll()
    if mode == "size":
        raw = os.environ.get("TRACE_RECONCILE_BUDGET", str(DEFAULT_RECONCILE_BUDGET))
        try:
            return SizeAware(int(raw))
        except ValueError:
            raise UsageError(f"TRACE_RECONCILE_BUDGET must be a token count, got {raw!r}") from None
    raise UsageError(f"TRACE_RECONCILE={mode!r} is not a reconciler; use 'size' or leave it unset")


def ingest(store, paths: list[str], *, format: str = "auto", session: str | None = None,
           strict: bool = False, redact: bool = True, wait: float = 0.0, reconciler=None, embed: bool = True,
           embedder: str | None = None, recheck: bool = False, working_state: bool = True,
           hold_open_tail: bool = False, live: bool = False, accept_changed_log: bool = False,
           on_error: Callable[[str], None] | None = None,
           on_progress: Callable[[str, int], None] | None = None) -> Iterator[IngestResult]:
    """`hold_open_tail` (live follow): drafts at the end of the file that may
    still merge with lines not written yet (the blocks of a message being
    streamed) are left for the next run, as an unfinished line is. `live`
    (hooks; implied by `hold_open_tail`): the agent is still writing the
    file, so leading lines that do not name their session yet (a resumed
    Claude Code session's summaries) wait for the line that does, instead
    of going into a session id made up from the file that a later run,
    once the file names its session, would not match."""
    if format != "auto" and format not in DETECTION_ORDER:
        raise UsageError(f"unknown --format {format!r}; choose one of: auto, {', '.join(DETECTION_ORDER)}")
    if not paths:
        raise UsageError("nothing to ingest: give PATH… (files or directories) or - for stdin")
    report = on_error or (lambda msg: None)
    reconciler = reconciler or reconciler_from_env()
    spills = SpillRegistry(store.dir / TMP)
    try:
        with store.writer(wait=wait, embed=embed, embedder=embedder, accept_changed_log=accept_changed_log) as w:
            tracker = WorkingStateTracker(w.state) if working_state else None
            appender = Appender(w.log, w.state, w.artifacts, redact_secrets=redact,
                                reconciler=reconciler, spills=spills, warn=report,
                                hooks=store.append_hooks(w) + ([tracker.on_append] if tracker else []))
            try:
                for src in expand_inputs(paths, spool_dir=ensure_dir(store.dir / TMP)):
                    if isinstance(src, MissingSource):
                        result = IngestResult(source=str(src).split(":", 1)[0], errors=1, error=str(src))
                        report(str(src))
                        yield result
                        continue
                    try:
                        try:
                            result = _ingest_source(src, w, appender, spills, format=format, session=session,
                                                    strict=strict, redact=redact, recheck=recheck, report=report,
                                                    on_progress=on_progress, tracker=tracker,
                                                    hold_open_tail=hold_open_tail, live=live or hold_open_tail)
                        except TraceError as exc:      # the store cannot go on (full disk): say what got in, stop
                            if getattr(exc, "result", None) is not None:
                                exc.result.errors += 1
                                exc.result.error = str(exc)
                                yield exc.result
                            raise
                        except OSError as exc:         # gone or unreadable since it was listed: before any append
                            why = exc.strerror or str(exc)
                            result = IngestResult(source=src.display, errors=1, error=f"{src.display}: cannot read it ({why})")
                            report(result.error)
                        yield result
                    finally:
                        if src.is_stdin:
                            src.path.unlink(missing_ok=True)
            finally:
                appender.settle()                  # the last batch on disk and in the state
    finally:
        spills.cleanup()


def _ingest_source(src: Source, w, appender: Appender, spills: SpillRegistry, *, format: str,
                   session: str | None, strict: bool, redact: bool, recheck: bool, report,
                   on_progress, tracker: WorkingStateTracker | None = None,
                   hold_open_tail: bool = False, live: bool = False) -> IngestResult:
    result = IngestResult(source=src.display)
    ident = redact_text(f"{src.source_id}|{format}|{session or ''}|{int(redact)}")[0]   # state.db keeps it
    fingerprint = None if src.is_stdin else src.fingerprint()
    if fingerprint and fingerprint[0] == 0:
        result.format = None if format == "auto" else format
        if src.walked:                                 # one a directory holds (a session not begun): quiet
            result.empty = result.unchanged = True
            return result
        return _empty(result)
    if fingerprint and not recheck:
        known = w.state.unchanged_file(ident, fingerprint)
        if known is not None:
            result.skipped, result.format = known
            result.unchanged = True
            return result
    resumed = None if (recheck or strict or src.compressed or not fingerprint) else \
        _resume_point(src, ident, fingerprint, w.state, format)
    common = dict(session=session, strict=strict, report=report, on_progress=on_progress, tracker=tracker,
                  hold_open_tail=hold_open_tail, live=live)
    if resumed is not None:
        src, fmt, drafts_before = resumed
        return _parse_and_append(src, result, ident, fingerprint, w, appender, spills, format=fmt,
                                 drafts_before=drafts_before, **common)
    if not src.compressed:
        return _parse_and_append(src, result, ident, fingerprint, w, appender, spills, format=format, **common)
    try:
        plain, whole = decompressed(src, ensure_dir(w.store.dir / TMP))   # only when new or changed: cron skips the rest
    except DamagedCompression as exc:
        return _unreadable(result, f"{src.display}: cannot read it ({exc})", report, ident, fingerprint, w.state)
    if not whole:
        # Like an unfinished last line: what its complete blocks hold is read, the
        # rest waits for the next run (pending: the file is not remembered as read).
        result.pending += 1
        report(f"{src.display}: its zstd data ends inside a frame (still being written, or cut short); "
               "left for the next run")
        if plain.path.stat().st_size == 0:              # not one block whole yet: nothing to parse
            plain.path.unlink()
            return result
    try:                                               # (the copy's time is now; the fingerprint has the file's)
        return _parse_and_append(plain, result, ident, fingerprint, w, appender, spills, format=format, **common)
    finally:
        plain.path.unlink(missing_ok=True)


RESUME_MIN_BYTES = 64 << 10       # the fingerprint's head hash covers this much: below it, parse it all


def _resume_point(src: Source, ident: str, fingerprint, state, format: str):
    """A grown file whose format can start parsing again mid-file
    (`resumes_at`) is read from a little before where its last clean
    ingest ended instead of from the top: (source to read, format, drafts
    counted before), or None to read it all. The earlier lines are in the
    log already; the few re-read are skipped by their keys."""
    previous = state.previous_file(ident)
    if previous is None:
        return None
    size, _, head, drafts, fmt = previous
    if fmt is None or size < RESUME_MIN_BYTES or fingerprint[0] <= size or fingerprint[2] != head:
        return None                                   # small, shrunk or rewritten: read it whole
    resumes_at = getattr(format_module(fmt), "resumes_at", None)
    if resumes_at is None or (format != "auto" and format != fmt):
        return None
    from dataclasses import replace
    from stores.ingest.sources import restart_point
    start = restart_point(src.path, size, resumes_at)
    return None if start is None else (replace(src, start=start), fmt, drafts)


def _empty(result: IngestResult) -> IngestResult:
    """Input with nothing in it: no error (nothing is wrong with it), but
    nothing found (`trace ingest` says so and exits 3)."""
    result.empty = True
    return result


def _no_records(src: Source, head: list, result: IngestResult, report, ident, fingerprint, state) -> IngestResult:
    """A source whose first records hold no JSON record: a half-written first
    line waits for the rest; anything else is unreadable, named."""
    if head and all(item.pending for item in head):    # a new transcript's first line, half-written
        BadLines(result, src.display, report, final=src.is_stdin).pending(head[0].line, head[0].reason)
        return result
    first_bad = next((item for item in head if isinstance(item, SourceError)), None)
    if first_bad is None:
        return _empty(result)
    why = f":{first_bad.line}: {first_bad.reason}; " if first_bad else ": "
    return _unreadable(result, f"{src.display}{why}no JSON records found (is it a transcript?)",
                       report, ident, fingerprint, state)


def _parse_and_append(src: Source, result: IngestResult, ident: str, fingerprint, w, appender: Appender,
                      spills: SpillRegistry, *, format: str, session: str | None, strict: bool, report,
                      on_progress, tracker: WorkingStateTracker | None = None, drafts_before: int | None = None,
                      hold_open_tail: bool = False, live: bool = False) -> IngestResult:
    fmt = format
    primed = None                                      # what detection read: parsing goes on from it
    if fmt == "auto":
        records = read_records(src, spills)
        samples, head = sniff(records)
        fmt = detect_format(samples)
        if undecided(fmt, samples):                    # read on: the format may show later
            more, more_head = sniff(records, SNIFF_MORE_RECORDS)
            samples, head = samples + more, head + more_head
            fmt = detect_format(samples)
        primed = chain(head, records)
        if not samples:
            return _no_records(src, head, result, report, ident, fingerprint, w.state)
        if fmt is None:
            return _unreadable(result, f"{src.display}: not a known transcript format (tried "
                                       f"{', '.join(DETECTION_ORDER)}); name one with --format",
                               report, ident, fingerprint, w.state)
    else:
        records = read_records(src, spills)
        samples, head = sniff(records)
        primed = chain(head, records)
        if not samples:                                # blank lines or an empty pipe: said as `auto` says it
            result.format = fmt
            return _no_records(src, head, result, report, ident, fingerprint, w.state)
        mismatch = mismatched_format(fmt, samples)
        if mismatch:
            result.format = fmt
            return _unreadable(result, f"{src.display}: its records are {mismatch}, not {fmt}; nothing written "
                                       f"from it (drop --format to detect it, or use --format {mismatch})",
                               report, ident, fingerprint, w.state)
    result.format = fmt
    module = format_module(fmt)
    ctx = ParseContext(path=src.display, source_id=src.source_id, session=session, growing=live)
    sessions: dict[str, None] = {}
    file_time = utc_now_iso(lambda: fingerprint[1] / 1e9 if fingerprint else time.time())

    def drafts(emit_errors: bool, check: bool, calls: list | None = None) -> Iterator[Draft]:
        """The file's drafts. A record the parser fails on costs that record
        only: the file is parsed again from the start without it. What the
        failed pass yielded is appended first (FLUSH) so the next pass
        dedupes it, and `replayed` says how many drafts it repeats; the
        anatomy collector (`calls[0]`) starts afresh with the new pass."""
        nonlocal primed
        records = primed if primed is not None else read_records(src, spills)
        primed = None                                  # a second pass (--strict) reads the file again
        said = BadLines(result, src.display, report if emit_errors else None, final=src.is_stdin)
        without: set[int] = set()
        while True:
            feed = RecordFeed(records, said, without)
            collector = calls[0] if calls else None
            yielded = 0
            ctx.ignored = 0                            # a restarted pass reads the file again from the start
            try:
                parsed = module.parse(collector.records(feed) if collector else feed, ctx)
                if collector:
                    parsed = collector.drafts(parsed)  # the model calls it shows, for anatomy records
                # Exported events keep exactly the time they were logged with.
                for item in parsed if fmt == "trace" else infer_times(parsed, file_time):
                    if isinstance(item, BadRecord):
                        said.bad(item.line, item.reason)
                        continue
                    if isinstance(item, Pending):
                        result.pending += item.records     # not remembered: the next pass reads them again
                        continue
                    if check:                          # (the appender checks every draft too)
                        problem = draft_problem(item)
                        if problem:
                            said.bad(item.line if type(item.line) is int else feed.line, problem)
                            continue
                    if len(sessions) < 10_000:
                        sessions.setdefault(item.session_id)
                    yielded += 1
                    yield item
                result.ignored = ctx.ignored + said.ignored
                return
            except Exception as exc:
                if os.environ.get("TRACE_DEBUG") or feed.line is None or len(without) >= MAX_PARSER_RESTARTS:
                    raise
                without.add(feed.line)
                said.bad(feed.line, f"could not read this record ({type(exc).__name__}: {str(exc)[:200]}); "
                                    f"the rest of the file is read without it")
                replayed[0] += yielded
                yield FLUSH
                records = read_records(src, spills)
                if calls:
                    calls[0] = collector_for(fmt, src.display, session, spills)

    replayed = [0]
    counts = AppendCounts()
    try:
        if strict:
            for _ in drafts(emit_errors=True, check=True):    # a dry parse: only the errors count
                pass
            if result.errors:
                report(f"{src.display}: --strict: {result.errors} bad record(s), nothing written from this file")
                return _finish(result, sessions, counts)
            result.errors = 0
            sessions.clear()
            replayed[0] = 0
        if tracker is not None:
            tracker.active = fmt != "trace"            # an import carries the task states it had
        calls = [collector_for(fmt, src.display, session, spills)]
        stream = drafts(emit_errors=not strict, check=False, calls=calls if calls[0] else None)
        if hold_open_tail:
            stream = _holding_open_tail(stream, result)
        appender.append_stream(_counting(stream, result, on_progress, src.display),
                               source_format=fmt, source_path=src.display, counts=counts)
        if calls[0] is not None:
            result.anatomy = write_calls(w.store.dir, calls[0], w.store.warn)
        if tracker is not None:
            result.states = appender.append_stream(iter(tracker.drafts()), source_format=STATE_FORMAT,
                                                   source_path=src.display).added
    except TraceError as exc:
        _finish(result, sessions, counts, replayed[0])         # what was appended before it, counted
        exc.result = result
        raise
    except OSError as exc:
        if exc.errno not in _STORE_FULL:
            raise
        _finish(result, sessions, counts, replayed[0])
        error = TraceError(f"could not write to the store ({exc.strerror}): free space and run it again; "
                           f"{result.added} event(s) of {src.display} were written before it")
        error.result = result
        raise error from exc
    except Exception as exc:       # a parser bug must not lose the batch boundary or show a traceback
        if os.environ.get("TRACE_DEBUG"):
            raise
        _finish(result, sessions, counts, replayed[0])
        result.errors += 1
        result.error = (f"{src.display}: could not finish ({type(exc).__name__}: {str(exc)[:200]}); "
                        f"{result.added} event(s) before this point were kept")
        report(result.error)
        return result
    _finish(result, sessions, counts, replayed[0])
    # A file with bad lines is remembered too: unchanged, the next run skips it
    # instead of reporting the same errors again (`--recheck` reparses it).
    # One with an unfinished last line is not: that line may complete.
    if fingerprint and result.pending == 0:
        drafts_seen = result.added + result.skipped + result.dropped
        if drafts_before is not None:                  # resumed: what was read again was counted before
            drafts_seen = drafts_before + result.added + result.dropped
        appender.after_durable(lambda: w.state.remember_file(ident, fingerprint, drafts_seen, fmt))
    return result


def _unreadable(result: IngestResult, error: str, report, ident: str, fingerprint, state) -> IngestResult:
    """A file nothing can be read from (not JSON, no known format, another
    format than --format named): reported, and remembered like a file with
    bad lines, so until it changes the next run skips it instead of
    reporting it again (a stray file under ~/.claude/projects would
    otherwise fill the cron log and fail every run)."""
    result.errors, result.error = 1, error
    report(error)
    if fingerprint:
        state.remember_file(ident, fingerprint, 0, None)
    return result


def _holding_open_tail(drafts: Iterator[Draft], result: IngestResult) -> Iterator[Draft]:
    """All drafts but the file's last run of one merge group (a message whose
    next block may be the next line written): held, counted as pending, so
    the next run reads them with what follows and merges them as a one-shot
    ingest would."""
    held: list[Draft] = []
    for d in drafts:
        if d is FLUSH:                                 # a restarted parse: what is held is not the file's end
            yield from held
            held = []
            yield d
            continue
        if held and d.merge_group == held[-1].merge_group:
            held.append(d)
            continue
        yield from held
        held = [d] if d.merge_group else []
        if not d.merge_group:
            yield d
    result.pending += len(held)


def _counting(drafts: Iterator[Draft], result: IngestResult, on_progress, display: str) -> Iterator[Draft]:
    n = 0
    for d in drafts:
        n += d is not FLUSH
        if on_progress and n % 1000 == 0:
            on_progress(display, n)
        yield d
    if on_progress:
        on_progress(display, n)


def _finish(result: IngestResult, sessions: dict, counts: AppendCounts, replayed: int = 0) -> IngestResult:
    result.added, result.dropped = counts.added, counts.dropped
    result.skipped = max(counts.skipped - replayed, 0)       # a restarted parse's repeats are not skips
    result.errors += counts.rejected
    result.redacted, result.artifacts = counts.redacted, counts.artifacts
    result.sessions = len(sessions)
    result.session_id = next(iter(sessions), None)
    return result
