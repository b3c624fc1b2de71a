"""Anatomy records: one per model call, with the Annex A.4 fields.

A record is a JSON object (camelCase, as A.4 names its fields):

  schema, key            format version; the record's identity (a record
                         whose key a session already holds is not written
                         again, so re-ingest and re-record add nothing twice)
  origin                 request (`trace anatomy record`), ingest (logged
                         calls and captures), transcript (Claude Code /
                         Codex usage), render (`trace context`)
  sessionId, turnId, ts  turnId is time-sortable (a ULID); sourceTurnId the
                         source's own turn when it has one
  api, model, source     where the call came from
  compactionCycle        compactions of this session so far
  contextUtilPct         contextTokens / window x 100 (null with no window)
  contextTokens(+Source) usage's figure when reported, else the cl100k sum
  window(+Source)        option | model (reducers/anatomy/model_windows.py) |
                         transcript (Codex's model_context_window) | budget
  systemPromptBytes, workspaceFileBytes, skillBytes, toolSchemaBytes,
  historyEventCount, markerCount, userMessageBytes   the A.4 sizes: each is
                         the size of that block as sent, so they may
                         overlap (a CLAUDE.md inside the system prompt is in
                         both); null where the source does not show it
  topicLabel, topicTransition   reducers/anatomy/topics.py
  slices                 {slice: {bytes, tokens}}: the same content split so
                         every byte lands once (reducers/anatomy/slices.py)
  usage                  normalised (reducers/anatomy/usage.py) with `raw`
  messages               request records: one row per message (role,
                         bytes, tokens, slices, digest)
  chainedTo              a Responses API request continuing a stored
                         response (previous_response_id) or conversation:
                         the body holds only the new input, so its sizes
                         and historyEventCount cover that input; usage,
                         when saved, is the whole context
  recognised             workspace files, skills, reminders, markers found
  context                which log events were in context: render records
                         list seqs and markers; ingest and transcript records
                         name the first and last draft keys of the window
  topic                  the topic state carried to the next call"""
from __future__ import annotations

from reducers.anatomy.decompose import Anatomy
from reducers.anatomy.topics import TopicState, next_topic
from reducers.anatomy.usage import normalise, response_usage
from reducers.anatomy.model_windows import known_window
from reducers.formats.common import content_digest

SCHEMA = 1


def request_record(anatomy: Anatomy, *, key: str, session_id: str, origin: str, source: dict,
                   ts: str | None = None) -> dict:
    """A record of a request body, before `sequence` places it after the
    session's previous record."""
    raw = response_usage(anatomy.response)
    usage = normalise(raw)
    record = {
        "schema": SCHEMA, "key": key, "origin": origin, "sessionId": session_id, "turnId": None, "ts": ts,
        "api": anatomy.api, "model": anatomy.model, "source": source,
        "compactionCycle": None, "contextUtilPct": None,
        "systemPromptBytes": anatomy.system_bytes, "workspaceFileBytes": anatomy.workspace_bytes,
        "skillBytes": anatomy.skill_bytes, "toolSchemaBytes": anatomy.tool_schema_bytes,
        "historyEventCount": anatomy.history_count, "markerCount": anatomy.marker_count,
        "userMessageBytes": anatomy.user_bytes, "topicLabel": None, "topicTransition": False,
        "contextTokens": usage["contextTokens"] if usage else sum(s["tokens"] for s in anatomy.slices.values()),
        "contextTokensSource": "usage" if usage else "estimate",
        "window": None, "windowSource": None,
        "messageCount": len(anatomy.message_rows), "toolCount": anatomy.tool_count,
        "mediaBlocks": anatomy.media_blocks, "requestBytes": anatomy.request_bytes,
        "requestHash": anatomy.request_hash, "slices": anatomy.slices,
        "usage": {**usage, "raw": raw} if usage else None,
        "messages": anatomy.messages, "recognised": anatomy.found,
    }
    if anatomy.chained_to:
        record["chainedTo"] = anatomy.chained_to
    return record


def sequence(record: dict, previous: dict | None, *, user_text: str | None, window: int | None = None,
             window_source: str | None = None, cycle: int | None = None) -> list[str]:
    """Fill what depends on the session's previous record (compaction
    cycle, topic) and on the window; returns the model names whose window
    is unknown (utilisation left out, never guessed).

    `cycle` given (a transcript counts its own compactions) is used as is;
    otherwise a request whose messages do not extend the previous call's
    (the history was rewritten: compacted, cleared or branched) starts a
    new cycle. A Responses API request that continues a stored response
    (`chainedTo`) sends only its new input: that is no rewrite."""
    warnings: list[str] = []
    if cycle is None:
        cycle = int(previous.get("compactionCycle") or 0) if previous else 0
        if previous and _rewritten(previous, record):
            cycle += 1
    record["compactionCycle"] = cycle
    state = TopicState.from_json(previous.get("topic")) if previous else None
    digest = content_digest(user_text) if user_text else None
    record["topicLabel"], record["topicTransition"], after = next_topic(state, user_text, digest)
    record["topic"] = after.as_json()
    if window is None:
        window = known_window(record.get("model"))
        window_source = "model" if window else None
        if window is None:
            warnings.append(record.get("model") or "(no model named)")
    record["window"], record["windowSource"] = window, window_source
    tokens = record.get("contextTokens")
    record["contextUtilPct"] = round(100.0 * tokens / window, 2) if window and tokens is not None else None
    return warnings


def _rewritten(previous: dict, record: dict) -> bool:
    before = [m["digest"] for m in previous.get("messages") or () if isinstance(m.get("i"), int)]
    now = [m["digest"] for m in record.get("messages") or () if isinstance(m.get("i"), int)]
    if not before or not previous.get("messages") or not record.get("messages") or record.get("chainedTo"):
        return False
    return now[:len(before)] != before


def request_key(session_id: str, request_hash: str, occurrence: int) -> str:
    """A request's identity in its session: the same body sent again later
    (a retry) is its next occurrence."""
    return f"call/{session_id}/{request_hash[:32]}/{occurrence}"


def public(record: dict) -> dict:
    """The record as replay shows it (without the carried topic state)."""
    return {k: v for k, v in record.items() if k != "topic"}
