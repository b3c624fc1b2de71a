"""Model calls found while a source is ingested: one anatomy record each.

A side channel beside the format parsers (which are not changed): the
collector sees every decoded source record and every draft the parser
makes from them, in order, and notes the calls the source shows:

- Claude Code: an assistant message with `usage` (one call per message
  id; a streamed message spans several lines and the last line's usage
  counts). `<synthetic>` messages (written by the client, not a model) are
  no call. The call's context is its thread's drafts before the message:
  the main conversation's, or a sub-agent's own (sidechain) ones, told
  apart by agentId or, where older versions write none, by the turn the
  sub-agent's prompt opened ("side:<turn>").
- Codex: an `event_msg` token_count with `info.last_token_usage` (a report
  repeating the previous one's totals is the same call). The window is the
  rollout's own `model_context_window`; the context is the drafts before
  the call's first output item.
- logged calls, HTTP captures and request bodies with a `model` (the
  `openai` and `anthropic` formats): the body itself, decomposed
  (reducers/anatomy/decompose.py); the context is the conversation's
  drafts up to the request's last message (the reply is not in it).
Each thread's window since its last compaction is a Window
(reducers/anatomy/thread_window.py).

For a transcript call the record's slices are the visible drafts of the
window, cut with the same heuristics as a request body, and `unlogged`:
what the usage counted beyond them (the harness's system prompt and tool
schemas, which transcripts do not write down). The visible part is
counted with cl100k_base, the whole by the provider's tokenizer: the
split is an estimate, the total is the provider's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from reducers.anatomy.decompose import NotARequest, decompose, request_body
from reducers.anatomy.records import SCHEMA, request_key, request_record
from reducers.anatomy.slices import Measure, measure_text, ordered
from reducers.anatomy.thread_window import ASSISTANT_SIDE, Window
from reducers.anatomy.usage import normalise
from reducers.formats.claude_code_sdk import document_records, sdk_line
from reducers.drafts import Draft
from reducers.formats.common import content_digest, to_utc_iso

_API_FORMATS = ("openai", "anthropic")
_TRANSCRIPT_FORMATS = ("claude-code", "codex")


@dataclass
class _Pending:
    kind: str                       # claude-code | api
    line: int
    data: dict


class CallCollector:
    """Watch one source's records and drafts; `finish()` gives the records
    (each with the session it belongs to and what `sequence` needs)."""

    def __init__(self, fmt: str, path: str, session: str | None = None, measure: Measure = measure_text,
                 strict: bool = False):
        self.fmt = fmt
        self.strict = strict                          # raise instead of noting a problem (TRACE_DEBUG)
        self.problems: list[str] = []
        self.broken = False
        self.cc_done: list[dict] = []
        self.path = path
        self.session = session
        self.measure = measure
        self.windows: dict[tuple[str, str], Window] = {}
        self.pending: list[_Pending] = []
        self.out: list[dict] = []
        self.latest_session: str | None = session
        self.latest_thread: tuple[str, str] | None = None
        self.last_line_thread: tuple[int, tuple[str, str]] | None = None
        self.cc_messages: dict[str, dict] = {}       # message id -> its pending call (usage updates)
        self.codex_model: str | None = None
        self.codex_totals: Any = None
        self.run_start: dict[tuple[str, str], dict] = {}
        self.occurrences: dict[tuple[str, str], int] = {}
        self.track_slices = fmt in _TRANSCRIPT_FORMATS

    @staticmethod
    def wanted(fmt: str | None) -> bool:
        return fmt in _API_FORMATS or fmt in _TRANSCRIPT_FORMATS

    # -- the two streams ------------------------------------------------------

    def records(self, stream: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
        first = True
        for line, rec in stream:
            # a Claude Code document is read as the parser reads it: element by element, each at its position
            held = document_records(rec) if first and self.fmt == "claude-code" else None
            first = False
            for at, item in ((line, rec),) if held is None else enumerate(held, 1):
                try:
                    self._record(at, item)
                except NotARequest:
                    pass                              # the parser reports what it cannot read
                except Exception as exc:              # never let a side channel cost the ingest
                    if self.strict:
                        raise
                    self.problems.append(f"{self.path}:{at}: no anatomy record ({type(exc).__name__}: {exc})")
            yield line, rec

    def drafts(self, stream: Iterable) -> Iterator:
        """The parser's output, passed through; each draft noted as it
        leaves the parser (before anything downstream reorders them)."""
        for item in stream:
            if isinstance(item, Draft):
                self.draft(item)
            yield item

    def draft(self, d: Draft) -> None:
        try:
            if self.pending:
                self._resolve_before(d)
            self._apply(d)
        except Exception as exc:
            if self.strict:
                raise
            self.problems.append(f"{self.path}:{d.line}: anatomy tracking stopped ({type(exc).__name__}: {exc})")
            self.broken = True

    def finish(self) -> list[dict]:
        """The records, in source order (empty if tracking broke down)."""
        for p in self.pending:
            self._resolve(p, None)
        self.pending = []
        for data in self.cc_done:                     # built last: a streamed message's final usage counts
            self.out.append(self._transcript_record(
                data["snap"], data["line"], key=data["key"], model=data["model"], usage=data["usage"],
                raw=data["raw"], ts=data["ts"], window=None, api="claude-code", boundary=data["boundary"],
                extra={"requestId": data["request_id"]} if isinstance(data["request_id"], str) else None))
        self.cc_done = []
        return [] if self.broken else self.out

    # -- records ---------------------------------------------------------------

    def _record(self, line: int, rec: Any) -> None:
        if self.fmt == "claude-code":
            self._claude_code(line, rec)
        elif self.fmt == "codex":
            self._codex(line, rec)
        else:
            self._api(line, rec)

    def _claude_code(self, line: int, rec: Any) -> None:
        if not isinstance(rec, dict) or rec.get("type") != "assistant":
            return
        rec = sdk_line(rec)                           # the SDK stream names its session and sub-agents its own way
        msg = rec.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict) or msg.get("model") == "<synthetic>":
            return
        usage = normalise(msg["usage"])
        if usage is None:
            return
        mid = msg.get("id") if isinstance(msg.get("id"), str) else None
        if mid and mid in self.cc_messages:
            known = self.cc_messages[mid]
            known["usage"], known["raw"] = usage, msg["usage"]          # a later line of the same stream
            return
        session = self.session or (rec["sessionId"] if isinstance(rec.get("sessionId"), str) and rec["sessionId"]
                                   else self.latest_session)
        sidechain = rec.get("isSidechain") is True
        agent = rec.get("agentId") if isinstance(rec.get("agentId"), str) else None
        # a sub-agent without an agentId (older Claude Code) is told apart by its turn, which
        # the call's own drafts carry: the thread is settled when they come (None until then)
        data = {"session": session, "thread": (agent or None) if sidechain else "main", "id": mid,
                "request_id": rec.get("requestId"), "model": msg.get("model"), "usage": usage, "raw": msg["usage"],
                "ts": rec.get("timestamp")}
        if mid:
            self.cc_messages[mid] = data
            if len(self.cc_messages) > 4096:
                self.cc_messages.pop(next(iter(self.cc_messages)))
        self.pending.append(_Pending("claude-code", line, data))

    def _codex(self, line: int, rec: Any) -> None:
        if not isinstance(rec, dict):
            return
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            return
        if rec.get("type") == "turn_context" and isinstance(payload.get("model"), str):
            self.codex_model = payload["model"]
            return
        if rec.get("type") != "event_msg" or payload.get("type") != "token_count":
            return
        info = payload.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return
        totals = info.get("total_token_usage")
        if totals is not None and totals == self.codex_totals:
            return                                    # the same call reported again
        self.codex_totals = totals
        usage = normalise(info["last_token_usage"])
        if usage is None or self.latest_thread is None:
            return
        key = self.latest_thread
        snap = self.run_start.pop(key, None) or self.windows[key].snapshot()
        window = info.get("model_context_window")
        total = (totals or {}).get("total_tokens") if isinstance(totals, dict) else None
        self.out.append(self._transcript_record(
            snap, line, key=f"codex/{snap['session_id']}/{total}/{content_digest(info)}", model=self.codex_model,
            usage=usage, raw=info["last_token_usage"], ts=rec.get("timestamp"),
            window=window if isinstance(window, int) and window > 0 else None, api="codex",
            boundary=self._take_boundary(key)))
        self.windows[key].last_kind = None            # the next output item starts the next call

    def _api(self, line: int, rec: Any) -> None:
        if not isinstance(rec, (dict, list)):
            return
        for item in rec if isinstance(rec, list) else [rec]:
            body = request_body(item)
            if body is None or (item is body and "model" not in body):
                continue                              # a conversation saved whole, not a call
            self.pending.append(_Pending("api", line, {"anatomy": decompose(body, self.measure), "body_ts": _body_ts(item)}))

    # -- drafts ----------------------------------------------------------------

    def _thread_of(self, d: Draft) -> tuple[str, str]:
        meta = d.meta
        if self.fmt in _API_FORMATS:
            rest = d.key[len(d.key.split("/", 1)[0]) + 1 + len(d.session_id) + 1:]
            return d.session_id, rest.split("/", 1)[0] or "main"
        if meta and meta.get("sidechain") and self.fmt == "claude-code":
            return d.session_id, meta.get("agent_id") or f"side:{d.turn_id}"
        return d.session_id, "main"

    def _apply(self, d: Draft) -> None:
        """Add one draft to its thread's window (noting, in a Codex rollout,
        where a call's output begins)."""
        key = self._thread_of(d)
        w = self.windows.get(key)
        if w is None:
            w = self.windows[key] = Window(d.session_id, key[1])
        self.latest_session, self.latest_thread = d.session_id, key
        if d.line is not None:
            self.last_line_thread = (d.line, key)
        if self.fmt == "codex" and d.kind in ASSISTANT_SIDE and w.last_kind not in ASSISTANT_SIDE:
            self.run_start[key] = w.snapshot()        # a call's output begins: its context is what came before
        w.take(d, self.measure if self.track_slices else None)

    # -- resolving pending calls ---------------------------------------------------

    def _resolve_before(self, d: Draft) -> None:
        keep = []
        for p in self.pending:
            if d.line is None:
                keep.append(p)
            elif p.kind == "claude-code" and d.line >= p.line:
                self._resolve(p, self._thread_of(d) if d.line == p.line else None)
            elif p.kind == "api" and (d.line > p.line or (d.line == p.line and _is_reply(d, p))):
                self._resolve(p, self._thread_of(d) if d.line == p.line else None)
            else:
                keep.append(p)
        self.pending = keep

    def _resolve(self, p: _Pending, thread: tuple[str, str] | None) -> None:
        if p.kind == "claude-code":
            data = p.data
            session = data["session"] or self.latest_session
            if session is None:
                return
            if data["thread"] is None:
                data["thread"] = thread[1] if thread and thread[1].startswith("side:") else "sidechain"
            key = (session, data["thread"])
            w = self.windows.get(key) or Window(session, data["thread"])
            ident = data["id"] or f"L{p.line}-{content_digest(data['raw'])}"
            data.update(snap=w.snapshot(), line=p.line, key=f"cc/{session}/{ident}", boundary=self._take_boundary(key))
            self.cc_done.append(data)
            return
        if thread is None and self.last_line_thread and self.last_line_thread[0] == p.line:
            thread = self.last_line_thread[1]
        thread = thread or self.latest_thread
        if thread is None and self.session is None:
            return
        session = thread[0] if thread else self.session
        w = self.windows.get(thread) if thread else None
        anatomy = p.data["anatomy"]
        n = self.occurrences[(session, anatomy.request_hash)] = self.occurrences.get((session, anatomy.request_hash), 0) + 1
        record = request_record(anatomy, key=request_key(session, anatomy.request_hash, n), session_id=session,
                                origin="ingest", source={"format": self.fmt, "path": self.path, "line": p.line},
                                ts=p.data["body_ts"])
        record["context"] = {"thread": thread[1] if thread else None,
                             "sinceKey": w.since_key if w else None, "untilKey": w.until_key if w else None}
        self.out.append({"record": record, "user_text": anatomy.user_text, "window": None, "cycle": None,
                         "thread": record["context"]["thread"]})

    def _take_boundary(self, key: tuple[str, str]) -> str | None:
        w = self.windows.get(key)
        return w.take_boundary_note() if w is not None else None

    def _transcript_record(self, snap: dict, line: int, *, key: str, model: Any, usage: dict, raw: dict, ts: Any,
                           window: int | None, api: str, boundary: str | None, extra: dict | None = None) -> dict:
        slices = {s: {"bytes": b, "tokens": t} for s, (b, t) in snap["slices"].items() if b or t}
        visible = sum(v["tokens"] for v in slices.values())
        if usage["contextTokens"] > visible:
            slices["unlogged"] = {"bytes": 0, "tokens": usage["contextTokens"] - visible}
        record = {
            "schema": SCHEMA, "key": key, "origin": "transcript", "sessionId": snap["session_id"], "turnId": None,
            "sourceTurnId": snap["turn_id"], "ts": to_utc_iso(ts), "api": api,      # as the events have it
            "model": model if isinstance(model, str) else None,
            "source": {"format": self.fmt, "path": self.path, "line": line, **(extra or {})},
            "compactionCycle": snap["cycle"], "contextUtilPct": None,
            "systemPromptBytes": None, "workspaceFileBytes": snap["found"].get("workspace", 0),
            "skillBytes": snap["found"].get("skills", 0), "toolSchemaBytes": None,
            "historyEventCount": snap["events"], "markerCount": snap["markers"], "userMessageBytes": snap["user_bytes"],
            "topicLabel": None, "topicTransition": False,
            "contextTokens": usage["contextTokens"], "contextTokensSource": "usage",
            "window": None, "windowSource": None, "slices": ordered(slices), "usage": {**usage, "raw": raw},
            "context": {"thread": snap["thread"], "sinceKey": snap["since_key"], "untilKey": snap["until_key"]},
        }
        if boundary is not None:
            record["compaction"] = {"note": boundary}
        return {"record": record, "user_text": snap["user_text"], "window": window, "cycle": snap["cycle"],
                "thread": snap["thread"]}


def _is_reply(d: Draft, p: _Pending) -> bool:
    """A draft of the reply that came back with the call at its line: its
    key's place is the response (or, in a continued conversation, the
    place after the request's messages)."""
    parts = d.key.rsplit("/", 2)
    place = parts[-2] if len(parts) == 3 else ""
    return place.startswith("response") or place == f"m{len(p.data['anatomy'].message_rows)}"


def _body_ts(rec: Any) -> str | None:
    if isinstance(rec, dict):
        for k in ("timestamp", "created_at", "ts"):
            if rec.get(k) is not None:
                return to_utc_iso(rec[k])
    return None
