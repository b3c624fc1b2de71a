"""What `trace hooks run` does with an agent's hook payload.

A hook must never block or break the agent: every failure (a payload that
is not JSON, a transcript that is not there, a store locked past a short
wait, a bug) is written to the store's `hooks.log` and the hook still
exits 0 with nothing on stdout (or with only the valid JSON it owes).

- capture (Claude Code Stop, SubagentStop, SessionEnd, PreCompact,
  SessionStart; Codex Stop, PreCompact, SessionStart, notify): the
  transcript the payload names, with a Claude Code session's sub-agent
  transcripts, is ingested incrementally — only what it gained since the last run is
  added (the ordinary ingest; vectors are left to recall or `trace index`
  so the hook stays fast);
- re-injection (SessionStart with source `compact`): `additionalContext`
  holding the session's span in the log, its markers, notes, working state
  and digest lines, so what compaction dropped stays reachable;
- recall on prompt (UserPromptSubmit, only when installed with
  --recall-on-prompt): a <recalled-context> block of hits at or above the
  minimum score for the prompt."""
from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import groupby
from pathlib import Path

import orjson

from reducers.json_kinds import a_json_kind

LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 1 << 20
LOCK_WAIT = 2.0                      # seconds a hook waits for another writer before leaving it to the next run
CONTEXT_MAX_CHARS = 9_000            # Claude Code caps what a hook adds to the context at 10,000 characters
PROMPT_BLOCK_TOKENS = 1_500
CAPTURE_EVENTS = {"Stop", "SubagentStop", "SessionEnd", "PreCompact", "SessionStart", "notify"}
FINAL_EVENTS = {"SessionEnd"}        # after these the agent writes no more to the transcript
FORMATS = {"claude-code": "claude-code", "codex": "codex"}


@dataclass
class HookOutcome:
    stdout: str = ""                 # what the agent reads (valid hook JSON or nothing)
    ingested: int = 0
    logged: list[str] | None = None


def run_hook(store, agent: str, event: str, payload_text: str, *, min_score: float = 0.3) -> HookOutcome:
    outcome = HookOutcome(logged=[])
    try:
        _check_command(agent, event)
        payload = _payload(payload_text)
        try:
            transcript = _transcript(agent, event, payload)
            if event in CAPTURE_EVENTS and transcript is not None:
                found = [transcript, *_subagent_transcripts(agent, transcript, payload)]
                outcome.ingested = _capture(store, agent, found, outcome.logged, live=event not in FINAL_EVENTS)
        except _Refused as exc:                 # nothing to capture: what the store holds still goes back
            outcome.logged.append(str(exc))
        session = payload.get("session_id") or payload.get("thread-id")
        if event == "SessionStart" and payload.get("source", "compact") == "compact" and session:
            from stores.hooks.reinjection import session_memory
            text = session_memory(store, str(session), CONTEXT_MAX_CHARS)
            if text:
                outcome.stdout = _hook_json("SessionStart", text)
        elif event == "UserPromptSubmit" and isinstance(payload.get("prompt"), str):
            block = _recalled_block(store, payload["prompt"], min_score)
            if block:
                outcome.stdout = _hook_json("UserPromptSubmit", block)
    except _Refused as exc:
        outcome.logged.append(str(exc))
    except Exception as exc:                    # the agent must go on whatever happened here
        outcome.logged.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}")
        outcome.stdout = ""
    for line in outcome.logged:
        log_failure(store, agent, event, line)
    return outcome


class _Refused(Exception):
    """A payload the hook cannot act on: logged, nothing written."""


def _check_command(agent: str, event: str) -> None:
    """A hook command edited by hand (a misspelt agent or event) would
    otherwise do nothing, or fail deep in ingest, with no word of why."""
    if agent not in FORMATS:
        raise _Refused(f"unknown --agent {agent!r} in the hook command; use one of: {', '.join(FORMATS)} "
                       f"(`trace hooks install` writes it); nothing done")
    acted_on = CAPTURE_EVENTS | {"UserPromptSubmit"}
    if event not in acted_on:
        raise _Refused(f"TRACE does nothing on a {event!r} hook (it acts on {', '.join(sorted(acted_on))}); "
                       f"nothing done")


def _payload(text: str) -> dict:
    if not text.strip():
        raise _Refused("the payload is empty (the agent sends it as JSON on stdin); nothing done")
    try:
        value = orjson.loads(text) if text.strip() else None
    except orjson.JSONDecodeError as exc:
        raise _Refused(f"payload is not JSON ({exc}); first bytes: {_head(text)!r}") from None
    if not isinstance(value, dict):
        raise _Refused(f"payload is not a JSON object: {_head(text)!r}")
    return value


def _head(text: str, n: int = 80) -> str:
    """The first n characters, redacted before the cut (a key cut in half
    no longer looks like one): for the log, and for a prompt's recall
    query (logged in retrievals.jsonl)."""
    from reducers.redact import MAX_SECRET, redact
    return redact(text[:n + MAX_SECRET])[0][:n]


def _transcript(agent: str, event: str, payload: dict) -> Path | None:
    raw = payload.get("transcript_path")
    if raw is not None and not isinstance(raw, str):
        raise _Refused(f"transcript_path is {a_json_kind(raw)}, not a path; nothing ingested")
    if raw:
        path = Path(raw).expanduser()
        if not path.is_file():
            raise _Refused(f"transcript_path {raw} is not a file; nothing ingested")
        return path
    if agent == "codex":                         # notify, or a hook whose transcript_path is null
        thread = payload.get("thread-id") or payload.get("session_id")
        found = find_codex_rollout(str(thread)) if thread else None
        if found is None and event in CAPTURE_EVENTS:
            raise _Refused(f"no Codex rollout found for session {thread}; nothing ingested" if thread else
                           "payload names neither a transcript_path nor a session (thread-id, session_id); "
                           "nothing ingested")
        return found
    if event in CAPTURE_EVENTS:
        raise _Refused("payload names no transcript_path; nothing ingested")
    return None


def _subagent_transcripts(agent: str, transcript: Path, payload: dict) -> list[Path]:
    """A Claude Code session's sub-agents write their own transcripts, in
    `<session>/subagents/agent-<id>.jsonl` beside `<session>.jsonl`; the
    main file holds only the call and its final answer (2.1.x relays some
    of a foreground agent's lines, which ingest adds once). SubagentStop
    (Claude Code's, and Codex's, whose sub-agents keep rollouts of their
    own) names the one that finished as `agent_transcript_path`."""
    folder = transcript.parent / transcript.name.removesuffix(".jsonl") / "subagents"
    found = sorted(folder.glob("*.jsonl")) if agent == "claude-code" and folder.is_dir() else []
    named = payload.get("agent_transcript_path")
    if isinstance(named, str) and named:
        path = Path(named).expanduser()
        if path.is_file() and path not in found:
            found.append(path)
    return found


def find_codex_rollout(thread_id: str) -> Path | None:
    """$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl (newest first)."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()
    sessions = home / "sessions"
    if not sessions.is_dir() or "/" in thread_id:
        return None
    for day in sorted(sessions.glob("*/*/*"), reverse=True):
        for suffix in (".jsonl", ".jsonl.zst"):
            hits = sorted(day.glob(f"rollout-*{thread_id}{suffix}"))
            if hits:
                return hits[-1]
    return None


def _capture(store, agent: str, transcripts: list[Path], problems: list[str], live: bool) -> int:
    """`live`: the agent may still be writing (every event but SessionEnd),
    so lines that cannot be placed yet wait for the next run. A file whose
    last line is still being written (no newline yet) is mid-message: the
    blocks of that message already on disk wait with the unfinished line,
    so the next run reads them together and makes the one event a one-shot
    ingest of the finished file makes, not the message split in two."""
    from stores.errors import StoreLocked
    added = 0
    for writing, group in groupby(transcripts, key=lambda t: live and _mid_line(t)):
        try:
            results = list(store.ingest([str(t) for t in group], format=FORMATS[agent], wait=LOCK_WAIT,
                                        embed=False, live=live, hold_open_tail=writing, on_error=problems.append))
        except StoreLocked:
            problems.append(f"store busy for {LOCK_WAIT:g}s: {transcripts[0]} left for the next hook or ingest")
            return added
        added += sum(r.added for r in results)
    return added


def _mid_line(path: Path) -> bool:
    """Whether the file ends inside a line (its writer is mid-write); a
    compressed rollout is a finished one."""
    from stores.ingest.sources import COMPRESSED_SUFFIXES
    if path.name.endswith(COMPRESSED_SUFFIXES):
        return False
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:                    # unreadable: the ingest says why
        return False


def _recalled_block(store, prompt: str, min_score: float) -> str:
    from reducers.recall_block import build_block
    from stores.recall import Recaller, RecallQuery
    if not store.exists():
        return ""
    recaller = Recaller(store)
    recaller.prepare("fulltext")                 # no embedder load on the prompt path
    hits = recaller.recall(RecallQuery(query=_head(prompt, 4000), k=5, mode="fulltext", min_score=min_score))
    hits = [h for h in hits if not h.abandoned]          # a rewound branch never happened: recall names it, this does not
    tokens = PROMPT_BLOCK_TOKENS
    block = build_block([h.as_json() for h in hits], tokens) if hits else ""
    while len(block) > CONTEXT_MAX_CHARS and tokens > 100:   # text of many characters a token (runs of
        tokens //= 2                                         # spaces, rules) can pass the agent's character cap
        block = build_block([h.as_json() for h in hits], tokens)
    return block if len(block) <= CONTEXT_MAX_CHARS else ""


def _hook_json(event: str, context: str) -> str:
    return orjson.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}).decode()


def log_failure(store, agent: str, event: str, message: str) -> None:
    """One line (a traceback indented under it) in `<store>/hooks.log`;
    the log is rotated to hooks.log.1 past 1 MiB. Never raises: when the
    log cannot be written (a store the user cannot write), the line goes
    to stderr, which the agent keeps, rather than nowhere."""
    from reducers.redact import redact
    now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    head, _, rest = message.partition("\n")
    text = f"{now} {agent} {event}: {head}\n" + "".join(f"    {ln}\n" for ln in rest.splitlines())
    text = redact(text)[0]                           # an error may quote the payload it choked on
    path = store.dir / LOG_NAME
    try:
        from stores.paths import ensure_dir, private_umask
        with private_umask():
            ensure_dir(store.dir)
            if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name(LOG_NAME + ".1"))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, text.encode("utf-8", "replace"))
            finally:
                os.close(fd)
    except OSError as exc:
        import sys
        line = text.partition("\n")[0].partition(" ")[2]          # (without the time)
        sys.stderr.write(f"trace: hook {line} (not logged: {path}: {exc.strerror or exc})\n")


