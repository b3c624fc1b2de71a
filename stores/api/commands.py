"""The commands as `Store` methods: each CLI command calls exactly one of
these (plus its output), so a script gets what the command prints, typed.
Every method delegates to the module that owns the concept; imports stay
inside the methods so a cold `trace recall` loads only what it uses."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from stores.anatomy.record import RecordResult
    from stores.api.recall_result import RecallResult
    from stores.api.results import (DiffResult, ExportResult, FactList, LedgerRows, Note, NoteList, ReplayResult,
                                    Reverted, SessionList, ShowResult, WorkingStateResult)


def protected_tools(tools: Iterable[str] | None = None) -> frozenset[str]:
    """Tools never evicted or cleared: those named, else TRACE_PROTECTED_TOOLS
    (comma-separated), else the default TodoWrite and manage_todo_list."""
    from reducers.evict import PROTECTED_TOOLS
    if tools:
        return frozenset(tools)
    env = os.environ.get("TRACE_PROTECTED_TOOLS")
    return frozenset(t.strip() for t in env.split(",") if t.strip()) if env else frozenset(PROTECTED_TOOLS)


class CommandMethods:
    """Mixed into `Store` (stores/store.py), which provides dir, warn, note,
    require() and writer()."""

    # -- recall --------------------------------------------------------------

    def recall(self, query, **options) -> RecallResult:
        """Hits for `query` (text, or a stores.recall.RecallQuery), best first.
        Options are RecallQuery's: k, session, kinds, since, until, mode
        ("hybrid" | "fulltext" | "vector"), hops (1 | 2), min_score, mmr,
        rerank (the optional extra's model reorders the best 50), query_id. A Store keeps its recaller warm: many queries on one Store
        open the indexes once, and catch them up only when the log has grown."""
        from stores.api.recall_result import RecallResult
        from stores.recall import Recaller, RecallQuery
        from stores.recall.query import meaning_only_note
        from stores.log.segments import tail_seq
        q = query if isinstance(query, RecallQuery) else RecallQuery(query=query, **options)
        warnings = q.validate()
        recaller = self.__dict__.get("_recaller")
        if recaller is None:
            recaller = self._recaller = Recaller(self, note=self.note)
            self._prepared = {}
        self.require()
        if q.session:
            from stores.sessions import resolve_session
            q.session = resolve_session(self, q.session)       # a unique prefix will do; ambiguous lists them
        log_seq = tail_seq(self.segments_dir)
        if self._prepared.get(q.mode) != log_seq:     # the log grew (or first use): catch the indexes up
            recaller.prepare(q.mode)
            self._prepared[q.mode] = log_seq
        hits = recaller.recall(q)
        if (note := meaning_only_note(q, hits)) is not None:
            warnings.append(note)
        return RecallResult(query=q.query, hits=hits, vector_lag=recaller.vector_lag, warnings=warnings, asked=q)

    # -- the context window ----------------------------------------------------

    def compact(self, session: str, *, protect: Iterable[str] | None = None, **options):
        """Evict old spans of a session's context into pointer markers
        (stores/context/compaction.py has the options: budget, headroom,
        hot_tail, strategy, dry_run, wait, auto, window). Returns a
        CompactResult; `fits` is False, with `stopped` saying why, when the
        budget could not be reached."""
        from stores.context import compact
        return compact(self, session, protected=protected_tools(protect), **options)

    def context(self, session: str, *, protect: Iterable[str] | None = None, keep_tool_results: int = 8,
                clear_trigger: int = 30_000, clear_at_least: int = 0, record: bool = True, fmt: str = "json",
                **options):
        """The push pack for a session (stores/context/pack.py has the
        options: budget, query, overflow, window, recall, recall_min_score,
        cross_session, tool_max_tokens). Returns a PushResult;
        `.formatted(fmt)` gives it in a client's shape. With `record`, the
        render's anatomy record is written before it returns; the CLI
        records after printing instead (`record_render`)."""
        from reducers.pack_formats import PACK_FORMATS
        from reducers.retention import Retention
        from stores.context import push_pack
        from stores.errors import UsageError
        if fmt not in PACK_FORMATS:
            raise UsageError(f"unknown --format {fmt!r}; choose one of: {', '.join(PACK_FORMATS)}")
        from stores.context.kept_counts import kept_counts
        from stores.context.sessions import require_session
        retention = Retention(trigger_tokens=clear_trigger, keep_last=keep_tool_results, clear_at_least=clear_at_least)
        self.require()
        # One scope of kept token counts for the render and its formatting
        # (the pack in `fmt` is made here and kept: formatting counts too).
        session = require_session(self, session)       # a unique prefix resolved once; push_pack is given the id
        with kept_counts(self, session):
            result = push_pack(self, session, retention=retention, protected=tuple(protected_tools(protect)), **options)
            result.formatted(fmt)
            if record:
                self.record_render(result, fmt=fmt, budget=options.get("budget", 8000), query=options.get("query"))
        return result

    def record_render(self, result, **how) -> None:
        """Write the anatomy record of a render that was sent."""
        from stores.anatomy.render import record_render
        record_render(self, result, **how)

    # -- reading ---------------------------------------------------------------

    def show(self, selector: str | None = None, *, session: str | None = None, marker: str | None = None,
             tail: int | None = None, full: bool = False, original: bool = False) -> ShowResult:
        """Events verbatim by seq, range list or id, a session's (its `tail`
        last), or a marker's evicted span. `full` replaces artifact previews
        with the original text and carries attachments; with `original`
        too, one event with an artifact gives its bytes as they were
        (`result.original`) instead."""
        from stores.api.results import ShowResult
        from stores.log.lookup import attachment_blocks, full_text, select_events
        events = select_events(self, selector, session, marker, tail)
        if full and original and len(events) == 1 and events[0].get("artifact"):
            return ShowResult(events, original=self.artifacts.iter_bytes(events[0]["artifact"]["id"]))
        if full:
            events = [{**e, "text": full_text(self, e), "full": True} if e.get("artifact") else e for e in events]
            events = [{**e, "attachments_content": attachment_blocks(self, e)}
                      if (e.get("meta") or {}).get("attachments") else e for e in events]
        return ShowResult(events)

    def export(self, session: str | None = None, *, with_artifacts: bool = True) -> ExportResult:
        """The log, or one session (a unique id prefix will do), as `trace`
        events with artifacts (and attachments) inlined; `trace ingest
        --format trace` reads it back."""
        from stores.api.results import ExportResult
        from stores.log.lookup import export_events
        self.require()
        if session:
            from stores.sessions import resolve_session
            session = resolve_session(self, session)
        return ExportResult(session, export_events(self, session, with_artifacts=with_artifacts))

    def sessions(self, *, source: str | None = None, since: str | None = None,
                 grep: str | None = None) -> SessionList:
        """Every session, newest first, filtered by format or source path,
        activity since a time, or text in its id, title or path."""
        from stores.api.results import SessionList
        from stores.sessions import list_sessions
        return SessionList(list_sessions(self, source=source, since=since, grep=grep))

    def state(self, session: str) -> WorkingStateResult:
        """A session's latest working state (a unique prefix of its id will
        do); NoResult (exit 3) when it has none."""
        from stores.api.results import WorkingStateResult, from_dict
        from stores.context.sessions import require_session
        from stores.errors import NoResult
        from stores.working_state import working_state
        found = working_state(self, session)
        if found is None:
            session = require_session(self, session)
            found = working_state(self, session)
        if found is None:
            raise NoResult(f"no working state for session {session!r} yet: it is kept when the session is "
                           f"ingested (not with --no-state)")
        return from_dict(WorkingStateResult, found)

    # -- notes -----------------------------------------------------------------

    def add_note(self, text: str, category: str, session: str | None = None, *, wait: float = 0.0) -> Note:
        """Append a note (global without a session); it is never evicted."""
        from stores.api.results import Note, from_dict
        from stores.notes import add_note
        return from_dict(Note, add_note(self, text, category, self._note_session(session), wait=wait))

    def notes(self, session: str | None = None, *, category: str | None = None,
              limit: int | None = None) -> NoteList:
        """Notes, newest first: a session's own and the global ones, or all."""
        from stores.api.results import Note, NoteList, from_dict
        from stores.notes import list_notes
        notes = list_notes(self, session=self._note_session(session), category=category, limit=limit)
        return NoteList([from_dict(Note, n) for n in notes])

    def _note_session(self, text: str | None) -> str | None:
        """The session a note names: its id or a unique prefix of one the
        store holds. An id no event has is refused, not made into a new
        session (a typo would file the note where no session finds it)."""
        if not text:
            return text
        from stores.sessions import resolve_session
        self.require()                        # no store, no session: say that, not "knows 0 sessions"
        return resolve_session(self, text)

    # -- long-term memory -------------------------------------------------------

    def sweep(self, **options):
        """The nightly sweep (stores/sweep/runner.py has the options: dry_run,
        wait, allow_delete, model, on_decision, on_progress). Returns a
        SweepReport."""
        from stores.sweep import run_sweep
        return run_sweep(self, **options)

    def digest(self, out: str | os.PathLike | None = None, *, max_lines: int = 80):
        """The bounded digest of live facts and episodes; with `out`, written
        there (a page edited by hand gets PAGE.proposed). Returns a DigestResult."""
        from stores.digest import write_digest
        return write_digest(self, out, max_lines=max_lines)

    def facts(self, *, include_deleted: bool = False) -> FactList:
        """The facts the last sweep left, most important first: live ones,
        or tombstoned ones too with `include_deleted`. A damaged knowledge
        file is IntegrityError (exit 5), never facts left out."""
        from stores.api.results import FactList
        from stores.sweep import facts, swept
        self.require()
        return FactList(facts(self, include_deleted=include_deleted), swept=swept(self))

    def ledger(self, key: str | None = None, *, changes: bool = False) -> LedgerRows:
        """The ledger's decisions, oldest first: one fact key's (as stored or
        as the digest shows it) when given, and without NONE decisions with
        `changes`."""
        from stores.api.results import LedgerRows
        from stores.sweep import ledger_rows, swept
        self.require()
        rows = [r for r in ledger_rows(self, key) if not (changes and r.get("action") == "NONE")]
        return LedgerRows(rows, swept=swept(self))

    def revert(self, ledger_id: str, *, wait: float = 0.0) -> Reverted:
        """Undo one sweep decision by its ledger id (`ledger()` lists them);
        the undo is itself a ledger row (REVERT). TraceError for an unknown id."""
        from stores.api.results import Reverted
        from stores.sweep import revert_decision
        return Reverted(revert_decision(self, ledger_id, wait=wait))

    def record_calls(self, files: list[str], *, session: str, window: int | None = None) -> RecordResult:
        """Anatomy records for model calls given as request bodies (`trace
        anatomy record`): files, or "-" for stdin, holding one JSON object, a
        JSON array or JSON Lines of Anthropic, OpenAI Chat or Responses
        bodies (logged calls and HTTP captures too). All or nothing."""
        from stores.anatomy.record import record_requests
        return record_requests(self, files, session=session, window=window)

    def diff(self, session: str, a: int, b: int, *, window: int | None = None) -> DiffResult:
        """What entered and left a session's context between its calls `a`
        and `b` (1 is the first), with why each event left when known."""
        from stores.anatomy import replay as anatomy
        from stores.api.results import DiffResult
        found = anatomy.diff(self, session, a, b, window)
        return DiffResult(found["summary"], found["changes"])

    def replay(self, session: str, *, turn: int | None = None, window: int | None = None) -> ReplayResult:
        """A session's model calls from their anatomy records, or one call
        (`turn`, 1 is the first) rebuilt with the events it had in context."""
        from stores.anatomy import replay as anatomy
        from stores.api.results import ReplayResult
        if turn is not None:
            return ReplayResult(session, turn=anatomy.turn(self, session, turn, window))
        return ReplayResult(session, calls=anatomy.replay(self, session, window))
