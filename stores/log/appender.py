"""The append chokepoint (paper 9.3): every event that enters the log, from
every format and every command, passes through `Appender`.

Per turn, in order:
  1. dedupe: drop drafts whose source key is already in the log;
  2. merge the blocks of one streamed message (after dedupe, so a message
     that grew since the last ingest yields a continuation, not a repeat);
  3. redact secrets in every field of the draft, not only its text
     (before anything is written, artifacts included; the strings that
     name it before dedupe: reducers/redact_fields.py);
  4. the hot-path reconciler decides the turn: ADD or NONE per event;
  5. large tool output goes to the artifact store and the event keeps a
     head/tail preview (stores/log/externalize.py); images and documents go
     there whole, as attachments;
  6. token counts; then `EventLog.append`, one fsync per batch;
  7. the derived state (keys, counters) and any index hooks catch up; the
     hooks are handed the artifact contents still in memory, by seq.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from reducers.drafts import Draft, merge_adjacent
from reducers.event_schema import NOT_CARRIED, draft_problem
from reducers.reconcile import ADD, AddAll, WorkingSet, output_digest
from reducers.redact import redact
from reducers.redact_fields import redact_drafts, redact_identities
from reducers.tokens import count_tokens
from stores.log.artifacts import ArtifactStore, BadArtifactId
from stores.log.attachments import store_media
from stores.ingest.big_lines import SpillRegistry
from stores.log.event_log import EventLog
from stores.log.externalize import Externalizer
from stores.ingest_state import IngestState, all_keys

ARTIFACT_THRESHOLD_TOKENS = 2000      # tool output above this lives in artifacts/
INLINE_MAX_CHARS = 1 << 20            # any other text above this too (a 100 MB paste)
BATCH_EVENTS = 2000
_RECENT_OUTPUTS = 100_000
_WORKING_SESSIONS = 1024
_KEPT_TEXT_CHARS = 64 << 20           # artifact content a batch hands its hooks (the rest is read back)


@dataclass(slots=True)
class AppendCounts:
    added: int = 0
    skipped: int = 0           # already in the log
    dropped: int = 0           # the reconciler said NONE
    redacted: int = 0
    artifacts: int = 0
    rejected: int = 0          # drafts that broke the event schema: reported, never appended


FLUSH = object()               # in a draft stream: append what is batched now (a parser restarts after it)


class Appender:
    def __init__(self, log: EventLog, state: IngestState, artifacts: ArtifactStore, *,
                 redact_secrets: bool = True, reconciler=None,
                 artifact_threshold: int = ARTIFACT_THRESHOLD_TOKENS,
                 spills: SpillRegistry | None = None,
                 hooks: Iterable[Callable[[list[dict], list[tuple[int, int]], dict[int, str]], None]] = (),
                 warn: Callable[[str], None] = lambda msg: None):
        self.log = log
        self.state = state
        self.artifacts = artifacts
        self.redact_secrets = redact_secrets
        self.reconciler = reconciler or AddAll()
        self.artifact_threshold = artifact_threshold
        self.spills = spills
        self.hooks = list(hooks)
        self.warn = warn
        self._unrecorded: list[dict] | None = None      # appended, not yet in the ingest state
        self._after_durable: list[Callable[[], None]] = []
        self._working: dict[str, WorkingSet] = {}
        self._untracked = WorkingSet()
        self.externalizer = Externalizer(artifacts, spills, redact_secrets=redact_secrets)

    # -- the stream interface used by ingest -------------------------------

    def append_stream(self, drafts: Iterable[Draft], *, source_format: str, source_path: str,
                      counts: AppendCounts | None = None) -> AppendCounts:
        """Append a source's drafts in order, a batch of whole turns at a time.
        `counts` (given by a caller that must report them even if this
        raises) is updated batch by batch."""
        counts = counts if counts is not None else AppendCounts()
        batch: list[Draft] = []
        for turn in _turns(drafts):
            if turn is FLUSH:
                self._append_batch(batch, source_format, source_path, counts)
                batch = []
                continue
            batch.extend(turn)
            if len(batch) >= BATCH_EVENTS:
                self._append_batch(batch, source_format, source_path, counts)
                batch = []
        self._append_batch(batch, source_format, source_path, counts)
        return counts

    def append_drafts(self, drafts: list[Draft], *, source_format: str, source_path: str) -> AppendCounts:
        counts = AppendCounts()
        try:
            self._append_batch(drafts, source_format, source_path, counts)
        finally:
            self.settle()
        return counts

    # -- durability ----------------------------------------------------------

    def after_durable(self, action: Callable[[], None]) -> None:
        """Run `action` once everything appended so far is on disk (a file's
        fingerprint must not be remembered before its events are)."""
        self._after_durable.append(action)
        if self._unrecorded is None:
            self.settle()

    def settle(self) -> None:
        """Wait for the last batch's fsync, then record it in the ingest
        state and run what waited for it."""
        if self._unrecorded is not None:
            self.log.wait_durable()
        self._record_durable()

    def _record_durable(self) -> None:
        """Record the last batch, which the log has made durable, in the
        ingest state (which must never get ahead of the log), then run what
        waited for it."""
        if self._unrecorded is not None:
            sealed, self._unrecorded = self._unrecorded, None
            self.state.record(sealed)
        actions, self._after_durable = self._after_durable, []
        for action in actions:
            action()

    # -- one batch ---------------------------------------------------------

    def _append_batch(self, drafts: list[Draft], fmt: str, path: str, counts: AppendCounts) -> None:
        drafts = self._well_formed(drafts, path, counts)
        if not drafts:
            return
        if self.redact_secrets:
            drafts, path = redact_identities(drafts), redact(path)[0]
        # The previous batch may still be on its way to disk (its fsync overlaps
        # with this batch): it is not in the ingest state yet, so its keys and
        # sessions are looked up in memory.
        pending = self._unrecorded
        keys = self._keys_to_look_up(drafts, pending)
        seen = self.state.seen_among(keys) if keys else set()
        if keys and pending:
            pending_keys = set(all_keys(pending))
            seen.update(k for k in keys if k in pending_keys)
        fresh = [d for d in drafts if not (seen and any(k in seen for k in d.all_keys()))] if seen else drafts
        counts.skipped += len(drafts) - len(fresh)
        if len(fresh) < len(drafts):
            kept = {id(d) for d in fresh}
            self._restore_artifacts(d for d in drafts if id(d) not in kept and d.artifact and d.artifact_text is not None)
        events: list[dict] = []
        full_texts: dict[int, str] = {}      # event index -> artifact content still in memory
        kept_chars = 0
        declined: list[str] = []
        merged = merge_adjacent(fresh)
        if self.redact_secrets:
            merged, redacted = redact_drafts(merged, self.spills.holds_marker if self.spills is not None else None)
            counts.redacted += redacted
        for turn in _turns(merged):
            working = self._working_set(turn[0].session_id)
            tracked = working is not self._untracked
            decisions = self.reconciler.decide_turn(turn, working)
            for draft, decision in zip(turn, decisions):
                if decision != ADD:
                    counts.dropped += 1
                    declined.extend(draft.all_keys())
                    continue
                event, full_text = self._event(draft, fmt, path, counts)
                if full_text is not None and kept_chars + len(full_text) <= _KEPT_TEXT_CHARS:
                    kept_chars += len(full_text)
                    full_texts[len(events)] = full_text
                if tracked:
                    working.tokens += event["tokens"] + (event.get("artifact") or {}).get("tokens", 0)
                    if event["kind"] == "tool_result" and len(working.recent_outputs) < _RECENT_OUTPUTS:
                        working.recent_outputs.add(output_digest(draft.text))
                events.append(event)
        self.state.record_declined(declined)
        if not events:
            return
        sealed = self.log.append(events, durable=False)   # waits for the previous batch's fsync
        if pending is not None:
            self._record_durable()
        self._unrecorded = sealed
        known = {sealed[i]["seq"]: text for i, text in full_texts.items()}
        for hook in self.hooks:
            hook(sealed, self.log.last_locations, known)
        counts.added += len(sealed)

    def _well_formed(self, drafts: list[Draft], path: str, counts: AppendCounts) -> list[Draft]:
        """The drafts that fit the event schema; each one that does not is
        reported as `path:line: reason` and never reaches the log."""
        bad = None
        for i, d in enumerate(drafts):
            problem = draft_problem(d)
            if problem:
                bad = bad or {}
                bad[i] = problem
        if not bad:
            return drafts
        for i, problem in bad.items():
            counts.rejected += 1
            line = drafts[i].line if type(drafts[i].line) is int else "?"
            self.warn(f"{path}:{line}: {problem}; this event was not written")
        return [d for i, d in enumerate(drafts) if i not in bad]

    def _restore_artifacts(self, imported: Iterable[Draft]) -> None:
        """An event already in the log whose artifact the store lacks (it was
        imported from an export without contents) gets it back from an export
        that carries it: content-addressed, so only the exact bytes fit."""
        for d in imported:
            artifact_id = str(d.artifact.get("id", ""))
            if not self._holds(artifact_id):
                data = d.artifact_text.encode("utf-8", "surrogatepass")
                if hashlib.sha256(data).hexdigest() == artifact_id:
                    self.artifacts.put(data)

    def _keys_to_look_up(self, drafts: list[Draft], pending: list[dict] | None) -> list[str]:
        """The drafts' keys that may already be in the log. A parser's key
        names its session (`<format>/<session>/…`), so it can only be in a
        log that holds the session: a first ingest of new transcripts looks
        up nothing. Imported events keep their original keys, which may name
        another session: those are always looked up."""
        wanted = {d.session_id: None for d in drafts}
        present = self.state.sessions_among(wanted)
        if pending:
            present.update(e["session_id"] for e in pending if e["session_id"] in wanted)
        keys = []
        for d in drafts:
            if d.source is not None or d.session_id in present:
                keys.extend(d.all_keys())
        return keys

    def _working_set(self, session_id: str) -> WorkingSet:
        if not getattr(self.reconciler, "uses_working_set", True):
            return self._untracked                 # nothing reads it: keep memory flat
        ws = self._working.get(session_id)
        if ws is None:
            if len(self._working) >= _WORKING_SESSIONS:
                self._working.pop(next(iter(self._working)))
            # (A session back after 1,024 others may miss the unrecorded batch's
            # tokens here: an estimate for the size-aware reconciler, no more.)
            ws = self._working[session_id] = WorkingSet(tokens=self.state.session_tokens(session_id))
        return ws

    # -- building the event ------------------------------------------------

    def _event(self, d: Draft, fmt: str, path: str, counts: AppendCounts) -> tuple[dict, str | None]:
        """The event to append, and the full content of its artifact when
        that is in memory (the index need not read it back)."""
        text = d.text
        artifact = d.artifact
        tool = d.tool
        full_text = None
        if self.spills is not None and self.spills.holds_marker(text):
            artifact, text, redacted = self.externalizer.stream(text)
            counts.artifacts += 1
            counts.redacted += redacted
            if tool and d.kind == "tool_call":
                tool = {**tool, "input": "[input too large: in the artifact]"}
        elif d.artifact_text is not None:
            full_text = d.artifact_text
            artifact, text = self.externalizer.text(d.artifact_text, preview=text if artifact else None)
            counts.artifacts += 1
        elif artifact is not None and not self.artifacts.exists(artifact["id"]):
            self.warn(f"{path}:{d.line or '?'}: event {d.event_id} refers to artifact {artifact['id'][:12]}… "
                      f"which this store does not hold (export with its artifacts to carry it)")
            artifact = {**artifact, NOT_CARRIED: True}
        elif artifact is not None and NOT_CARRIED in artifact:
            artifact = {k: v for k, v in artifact.items() if k != NOT_CARRIED}     # this store holds it
        elif artifact is None and self._too_big(d):
            full_text = text
            artifact, text = self.externalizer.text(text)
            counts.artifacts += 1
        if d.source is not None:
            source = d.source                      # an exported event keeps its provenance
        else:
            source = {"format": fmt, "path": path, "line": d.line, "uuid": d.uuid, "key": d.key}
            if d.merged_keys:
                source["merged"] = d.merged_keys
            if d.parent is not None:
                source["parent"] = d.parent
        tokens = d.tokens if d.tokens is not None and text == d.text else count_tokens(text)
        event = {"session_id": d.session_id, "turn_id": d.turn_id, "ts": d.ts, "kind": d.kind,
                 "text": text, "tokens": tokens, "source": source}
        if d.event_id:
            event["id"] = d.event_id
        if tool is not None:
            event["tool"] = tool
        if artifact is not None:
            event["artifact"] = artifact
        if d.media:
            # Images and documents are kept whole; the text has a placeholder.
            attachments = store_media(d.media, self.artifacts, self.spills, redact_secrets=self.redact_secrets)
            counts.artifacts += len(attachments)
            event["meta"] = {**(d.meta or {}), "attachments": attachments}
        elif d.meta:
            event["meta"] = d.meta
            if d.source is not None and d.meta.get("attachments"):
                event["meta"] = {**d.meta, "attachments": [self._imported_attachment(att, d, path)
                                                           for att in d.meta["attachments"]]}
        return event, full_text

    def _imported_attachment(self, att: dict, d: Draft, path: str) -> dict:
        """An exported event's attachment, marked when this store does not
        hold its content (verify then notes it instead of failing)."""
        att = {k: v for k, v in att.items() if k != NOT_CARRIED}
        if self._holds(att.get("id")):
            return att
        self.warn(f"{path}:{d.line or '?'}: event {d.event_id} has attachment {str(att.get('id'))[:12]}… "
                  f"which this store does not hold (export with its artifacts to carry it)")
        return {**att, NOT_CARRIED: True}

    def _holds(self, artifact_id) -> bool:
        try:
            return self.artifacts.exists(str(artifact_id))
        except BadArtifactId:                     # not an artifact id at all
            return False

    def _too_big(self, d: Draft) -> bool:
        if d.kind == "tool_result":
            # tokens <= characters, so short text cannot cross the threshold
            return len(d.text) > self.artifact_threshold and count_tokens(d.text) > self.artifact_threshold
        return len(d.text) > INLINE_MAX_CHARS


def _turns(drafts: Iterable[Draft]) -> Iterator[list[Draft]]:
    """Consecutive drafts of one (session, turn); a FLUSH in the stream ends
    the turn and is passed on."""
    turn: list[Draft] = []
    for d in drafts:
        if d is FLUSH:
            if turn:
                yield turn
                turn = []
            yield FLUSH
            continue
        if turn and (d.session_id != turn[-1].session_id or d.turn_id != turn[-1].turn_id):
            yield turn
            turn = []
        turn.append(d)
    if turn:
        yield turn
