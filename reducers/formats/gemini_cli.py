"""Gemini CLI sessions: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`
(and the older whole-document `session-….json`).

As Gemini CLI's chat recording writes them (packages/core/src/services/
chatRecordingService.ts, chatRecordingTypes.ts, read 2026-11):
- a first line of metadata `{sessionId, projectHash, startTime, lastUpdated,
  kind?, directories?}` (the legacy .json is that object with `messages`);
- message records `{id, timestamp, type: user|gemini|info|error|warning,
  content, displayContent?}`; a `gemini` one adds `toolCalls[] {id, name,
  args, result, status, …}`, `thoughts[] {subject, description}`, `tokens`,
  `model`. A message is written again whole each time it changes (a tool
  call added, its result in, tokens counted): the last copy wins there;
- `{"$set": {…}}` updates metadata (`messages` replaces the list: a
  checkpoint) and `{"$rewindTo": id}` drops that message and the rest.
Files other tools wrote in this shape may leave out message ids or use the
Gemini API's terms (`model`, `parts`): they are read too (see _as_message).

TRACE keeps everything it was shown once: keys come from the message id and
the part (a tool call by its id, text by its digest), so a message written
again adds only what it gained, and a rewind is an event, not a deletion.
`content` is a PartListUnion: a string, a part, or a list of them (`text`,
`thought`, `functionCall`, `functionResponse`, `inlineData`, `fileData`,
`executableCode`, `codeExecutionResult`)."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, counted
from reducers.formats.common import (compact_json, content_digest, derived_session_id, one_message, to_utc_iso,
                                     tool_call_text)

NAME = "gemini-cli"
_MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")
_SKIPPED_SET_FIELDS = ("lastUpdated", "startTime", "sessionId", "projectHash", "kind", "messages")


def _is_metadata(d: dict) -> bool:
    return isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str)


def _is_message(d: dict) -> bool:
    return isinstance(d.get("id"), str) and d.get("type") in _MESSAGE_TYPES and "content" in d and "role" not in d


def sniff(samples: list) -> bool:
    dicts = [s for s in samples if isinstance(s, dict)]
    if not dicts:
        return False
    if any(_is_metadata(d) for d in dicts):
        return True
    # a file cut before its metadata: gemini-typed messages or the update records
    return (any(_is_message(d) and d["type"] == "gemini" for d in dicts)
            and all(_is_message(d) or "$set" in d or "$rewindTo" in d for d in dicts))


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    parser = _Parser(ctx)
    seen: set[str] = set()                 # a message written again yields its parts again: each is read once
    for line, rec in records:
        if not isinstance(rec, dict):
            yield BadRecord(line, "not a JSON object")
            continue
        # metadata and `lastUpdated` updates, and a message written again with nothing new, give nothing
        yield from counted(_unseen(parser.record(line, rec), seen), ctx)


def _unseen(items: Iterable[Draft | BadRecord], seen: set[str]) -> Iterator[Draft | BadRecord]:
    for item in items:
        if isinstance(item, Draft):
            if item.key in seen:
                continue
            seen.add(item.key)
        yield item


_REMEMBERED_IDS = 100_000         # message ids whose first line is kept (for a rewind's lines)


class _Parser:
    def __init__(self, ctx: ParseContext):
        self.ctx = ctx
        self.session: str | None = ctx.session
        self.turn: str | None = None
        self.calls: dict[str, str] = {}       # call id -> tool name, for results that come alone
        self.first_line: dict[str, int] = {}  # message id -> the line that first wrote it alone
        self.checkpoint = 0                   # the latest line that wrote the whole list (`$set` messages)

    def _session(self, rec: Any) -> str:
        if self.session is None:
            self.session = derived_session_id(self.ctx.source_id, 0, rec)
        return self.session

    def record(self, line: int, rec: dict) -> Iterator[Draft | BadRecord]:
        if _is_metadata(rec) and "id" not in rec:
            if self.session is None:
                self.session = rec["sessionId"]
            for i, msg in enumerate(rec.get("messages") or ()):
                yield from one_message(line, i, self.message(line, msg, f"#{i}"))
            return
        if "$rewindTo" in rec:
            target = rec["$rewindTo"]
            session = self._session(rec)
            meta = {"subtype": "rewind", "rewind_to": target}
            first = self.first_line.get(target) if isinstance(target, str) else None
            if first is not None and self.checkpoint < first < line:
                meta["rewinds"] = [first, line]         # the lines it withdrew (reducers/branches.py)
            yield Draft(kind="system", text=f"[conversation rewound: message {target} and those after it were "
                                             f"withdrawn from the model's history]",
                        session_id=session, key=f"{NAME}/{session}/rewind/{line}/{content_digest(rec)}",
                        turn_id=self.turn, line=line, meta=meta)
            return
        if isinstance(rec.get("$set"), dict):
            update = rec["$set"]
            if isinstance(update.get("messages"), list):
                self.checkpoint = line
            for i, msg in enumerate(update["messages"] if isinstance(update.get("messages"), list) else ()):
                yield from one_message(line, i, self.message(line, msg, f"#{i}"))
            kept = {k: v for k, v in update.items() if k not in _SKIPPED_SET_FIELDS}
            if kept:
                session = self._session(rec)
                text = update["summary"] if set(kept) == {"summary"} and isinstance(update["summary"], str) \
                    else compact_json(kept)
                yield Draft(kind="system", text=text, session_id=session,
                            key=f"{NAME}/{session}/set/{content_digest(kept)}", turn_id=self.turn, line=line,
                            meta={"subtype": "summary" if "summary" in kept else "metadata", "fields": sorted(kept)})
            return
        if (msg := _as_message(rec, f"L{line}")) is not None:
            if len(self.first_line) < _REMEMBERED_IDS:
                self.first_line.setdefault(msg["id"], line)
            yield from self.message(line, rec, f"L{line}")
            return
        yield BadRecord(line, "not a Gemini CLI record (metadata, message, $set or $rewindTo)")

    def message(self, line: int, msg: Any, at: str) -> Iterator[Draft | BadRecord]:
        msg = _as_message(msg, at)
        if msg is None:
            yield BadRecord(line, f"a message without a type ({', '.join(_MESSAGE_TYPES)}) or content")
            return
        session = self._session(msg)
        mid, mtype = msg["id"], msg["type"]
        ts = to_utc_iso(msg.get("timestamp"))
        base = f"{NAME}/{session}/{mid}"
        parts = _parts(msg.get("content"))
        if mtype == "user":
            texts = [p for p in parts if "functionResponse" not in p]
            if texts:
                self.turn = f"{session}/{mid}"
            yield from self._results(line, base, session, ts, [p for p in parts if "functionResponse" in p])
            text, media = _text(texts)
            if text or media:
                yield Draft(kind="user", text=text, session_id=session, key=f"{base}/text/{content_digest(text)}",
                            turn_id=self.turn, ts=ts, line=line, uuid=mid, media=media or None)
            return
        if mtype != "gemini":                    # info / error / warning: what the CLI told the user
            text, _ = _text(parts)
            yield Draft(kind="system", text=text, session_id=session, key=f"{base}/{mtype}/{content_digest(text)}",
                        turn_id=self.turn, ts=ts, line=line, uuid=mid, meta={"subtype": mtype})
            return
        meta = {"model": msg["model"]} if isinstance(msg.get("model"), str) else None
        for i, thought in enumerate(msg.get("thoughts") or ()):
            if isinstance(thought, dict):
                said = ": ".join(str(thought[k]) for k in ("subject", "description") if thought.get(k))
                yield Draft(kind="assistant", text=said, session_id=session,
                            key=f"{base}/thought/{content_digest(said)}", turn_id=self.turn,
                            ts=to_utc_iso(thought.get("timestamp")) or ts, line=line, uuid=mid,
                            meta={**(meta or {}), "thinking": True})
        thinking = [p for p in parts if p.get("thought") is True]
        said, media = _text([p for p in parts if p.get("thought") is not True and "functionCall" not in p])
        for p in thinking:
            text = p.get("text") or ""
            yield Draft(kind="assistant", text=text, session_id=session, key=f"{base}/thought/{content_digest(text)}",
                        turn_id=self.turn, ts=ts, line=line, uuid=mid, meta={**(meta or {}), "thinking": True})
        if said or media:
            yield Draft(kind="assistant", text=said, session_id=session, key=f"{base}/text/{content_digest(said)}",
                        turn_id=self.turn, ts=ts, line=line, uuid=mid, meta=meta, media=media or None)
        calls = [c for c in msg.get("toolCalls") or () if isinstance(c, dict) and c.get("id")]
        called = {c["id"] for c in calls}
        # a functionCall part the recording did not list as a tool call is still a call the model made
        for p in parts:
            fc = p.get("functionCall")
            if isinstance(fc, dict) and fc.get("id") not in called:
                calls.append({"id": fc.get("id") or f"part-{content_digest(fc)}", "name": fc.get("name"),
                              "args": fc.get("args")})
        for call in calls:
            cid, name = str(call["id"]), call.get("name")
            self.calls[cid] = name
            yield Draft(kind="tool_call", text=tool_call_text(name, call.get("args")), session_id=session,
                        key=f"{NAME}/{session}/call/{cid}", turn_id=self.turn,
                        ts=to_utc_iso(call.get("timestamp")) or ts, line=line, uuid=mid,
                        tool={"name": name, "call_id": cid, "input": call.get("args")},
                        meta={k: call[k] for k in ("displayName", "description", "agentId") if call.get(k)} or None)
            if call.get("result") is not None or call.get("status") in ("error", "cancelled"):
                output = _result_text(call.get("result"))
                if not output and isinstance(call.get("resultDisplay"), str):
                    output = call["resultDisplay"]
                yield Draft(kind="tool_result", text=output, session_id=session,
                            key=f"{NAME}/{session}/result/{cid}", turn_id=self.turn,
                            ts=to_utc_iso(call.get("timestamp")) or ts, line=line, uuid=mid,
                            tool={"name": name, "call_id": cid, "is_error": call.get("status") in ("error", "cancelled")},
                            meta={"status": call["status"]} if call.get("status") else None)

    def _results(self, line, base, session, ts, parts) -> Iterator[Draft]:
        for p in parts:
            fr = p["functionResponse"]
            if not isinstance(fr, dict):
                continue
            cid = str(fr.get("id") or f"part-{content_digest(fr)}")
            name = fr.get("name") or self.calls.get(cid)
            yield Draft(kind="tool_result", text=_result_text([p]), session_id=session,
                        key=f"{NAME}/{session}/result/{cid}", turn_id=self.turn, ts=ts, line=line,
                        tool={"name": name, "call_id": cid, "is_error": _is_error(fr)})


def _as_message(msg: Any, at: str) -> dict | None:
    """A message as chatRecordingService writes it, or None. What other
    writers of these files vary is read the same way: the Gemini API's
    name for the model's turn (`model`) and its `parts` for `content`; a
    message without an id is named by its position (`at`: its index in a
    document or a checkpoint, its line in a JSONL file)."""
    if not isinstance(msg, dict) or "role" in msg:
        return None
    mtype = "gemini" if msg.get("type") == "model" else msg.get("type")
    content = msg["content"] if "content" in msg else msg.get("parts")
    if mtype not in _MESSAGE_TYPES or content is None:
        return None
    mid = msg["id"] if isinstance(msg.get("id"), str) and msg["id"] else f"@{at}"
    return {**msg, "id": mid, "type": mtype, "content": content}


def _parts(content: Any) -> list[dict]:
    """A PartListUnion as a list of part objects (bare strings become text parts)."""
    if content is None:
        return []
    if not isinstance(content, list):
        content = [content]
    return [{"text": p} if isinstance(p, str) else p for p in content if isinstance(p, (str, dict))]


def _text(parts: list[dict]) -> tuple[str, list[dict]]:
    """Readable text of parts, with a placeholder for each media part (the
    part itself returned to be kept whole)."""
    out, media = [], []
    for p in parts:
        if isinstance(p.get("text"), str):
            out.append(p["text"])
        elif isinstance(p.get("inlineData"), dict) or isinstance(p.get("fileData"), dict):
            data = p.get("inlineData") or p.get("fileData")
            out.append(f"[{data.get('mimeType') or 'file'}{': ' + data['fileUri'] if data.get('fileUri') else ''}]")
            media.append(p)
        elif isinstance(p.get("executableCode"), dict):
            out.append(str(p["executableCode"].get("code") or ""))
        elif isinstance(p.get("codeExecutionResult"), dict):
            out.append(str(p["codeExecutionResult"].get("output") or ""))
        elif p:
            out.append(compact_json(p))
    return "\n".join(t for t in out if t), media


def _result_text(result: Any) -> str:
    """What a tool returned to the model: the functionResponse's output (or
    error), else the parts' text."""
    texts = []
    for p in _parts(result):
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            response = fr.get("response")
            if isinstance(response, dict) and set(response) <= {"output", "error"} and response:
                texts.extend(str(v) for v in (response.get("output"), response.get("error")) if v is not None)
            elif response is not None:
                texts.append(response if isinstance(response, str) else compact_json(response))
        else:
            text, _ = _text([p])
            texts.append(text)
    return "\n".join(t for t in texts if t)


def _is_error(fr: dict) -> bool:
    response = fr.get("response")
    return isinstance(response, dict) and "error" in response and "output" not in response
