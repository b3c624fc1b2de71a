"""OpenCode sessions, as `opencode export [sessionID]` writes them (one JSON
document `{info, messages: [{info, parts}], todos}`), or one `{info, parts}`
message per line, or the event stream `opencode run --format json` prints
(one `{type, timestamp, sessionID, part}` per line: step_start, text,
reasoning, tool_use, step_finish; `error` with its error instead of a part).

Shapes, from OpenCode's source (packages/opencode/src/session/message-v2.ts
and cli/cmd/export.ts, read 2026-11): a session `info` {id, projectID,
directory, title, version, time {created, updated}, parentID?}; a message
`info` {id, sessionID, role: user|assistant, time {created, completed?},
modelID?, providerID?, agent?, error?}; its parts, each {id, sessionID,
messageID, type}: `text` {text, synthetic?}, `reasoning` {text}, `tool`
{callID, tool, state {status: pending|running|completed|error, input,
output | error, title, metadata, time}}, `file` {mime, filename, url},
`subtask`, `agent`, `patch` {hash, files}, `compaction`, `retry`,
`step-start`/`step-finish` (usage bookkeeping) and `snapshot`. Times are
epoch milliseconds. (OpenCode itself keeps sessions in SQLite now; the
export is its file form.)

Keys are the part ids, so exporting a grown session again adds only the
new parts (and an export of a session whose run stream was ingested adds
only what the stream did not show: the user's prompt); a tool part gives a
call and, once it completed or failed, its result."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext, counted
from reducers.formats.common import compact_json, content_digest, one_message, to_utc_iso, tool_call_text

NAME = "opencode"
_BOOKKEEPING = ("step-start", "step-finish", "snapshot")


def _is_message(d: Any) -> bool:
    return (isinstance(d, dict) and isinstance(d.get("info"), dict) and isinstance(d.get("parts"), list)
            and d["info"].get("role") in ("user", "assistant") and isinstance(d["info"].get("id"), str))


def _is_export(d: Any) -> bool:
    return (isinstance(d, dict) and isinstance(d.get("info"), dict) and isinstance(d.get("messages"), list)
            and isinstance(d["info"].get("id"), str) and all(_is_message(m) for m in d["messages"][:5]))


def _is_run_event(d: Any) -> bool:
    """A line of `opencode run --format json`."""
    return (isinstance(d, dict) and isinstance(d.get("type"), str) and isinstance(d.get("sessionID"), str)
            and (isinstance(d.get("part"), dict) or d["type"] == "error"))


def sniff(samples: list) -> bool:
    dicts = [s for s in samples if isinstance(s, dict)]
    return bool(dicts) and all(_is_export(d) or _is_message(d) or _is_run_event(d) for d in dicts)


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    parts_seen: dict[str, str] = {}            # run stream: part -> digest as first seen; part/digest -> ""
    for line, rec in records:
        if _is_run_event(rec):
            yield from counted(_run_event(rec, line, ctx, parts_seen), ctx)    # nothing: bookkeeping or a repeat
            continue
        if _is_export(rec):
            session = ctx.session or rec["info"]["id"]
            yield from one_message(line, "info", _session_info(rec["info"], session, line))
            turn = None
            for i, msg in enumerate(rec["messages"]):
                turn = _turn(msg, session, turn)
                yield from one_message(line, i, _message(msg, session, line, turn, ctx))
            if isinstance(rec.get("todos"), list) and rec["todos"]:
                yield from one_message(line, "todos", _todos(rec["todos"], session, line, turn, rec["info"]))
        elif _is_message(rec):
            session = ctx.session or str(rec["info"].get("sessionID") or "opencode")
            yield from _message(rec, session, line, _turn(rec, session, None), ctx)
        else:
            yield BadRecord(line, "not an OpenCode export ({info, messages}) or message ({info, parts})")


def _run_event(rec: dict, line: int, ctx: ParseContext, parts_seen: dict[str, str]) -> Iterator[Draft]:
    """One event of the run stream, read as the one-part message the export
    would hold it in (same keys). A part sent again as it changes (same id,
    new text) is kept beside the first under its own key; sent again
    unchanged, it is counted as ignored."""
    session = ctx.session or rec["sessionID"]
    part = rec.get("part")
    if not isinstance(part, dict):             # an `error` event: what failed, as written
        error = rec.get("error") if isinstance(rec.get("error"), dict) else {}
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        said = {k: v for k, v in rec.items() if k not in ("type", "sessionID", "timestamp")}
        text = f"Error: {error.get('name') or rec['type']}" + (f": {data['message']}" if data.get("message") else "")
        yield Draft(kind="system", text=text if error else compact_json(said), session_id=session,
                    key=f"{NAME}/{session}/event/{content_digest(rec)}", line=line, ts=to_utc_iso(rec.get("timestamp")),
                    meta={"subtype": rec["type"], "fields": said})
        return
    mid = str(part.get("messageID") or f"L{line}")
    if part.get("type") in _BOOKKEEPING:
        return
    digest = content_digest(part)
    pid = str(part.get("id") or digest)
    if f"{mid}/{pid}/{digest}" in parts_seen:
        return
    parts_seen[f"{mid}/{pid}/{digest}"] = ""
    first = parts_seen.setdefault(f"{mid}/{pid}", digest)
    message = {"info": {"id": mid, "role": "assistant", "time": {"created": rec.get("timestamp")}},
               "parts": [part if first == digest else {**part, "id": f"{pid}~{digest}"}]}
    yield from _message(message, session, line, None, ctx)


def _session_info(info: dict, session: str, line: int) -> Iterator[Draft]:
    if info.get("title"):
        yield Draft(kind="system", text=f"Session title: {info['title']}", session_id=session,
                    key=f"{NAME}/{session}/title/{content_digest(info['title'])}", line=line,
                    ts=_time(info, "created"),
                    meta={"subtype": "title", **{k: info[k] for k in ("directory", "projectID", "parentID", "version")
                                                 if info.get(k)}})


def _time(holder: dict, key: str) -> str | None:
    """holder["time"][key] as a UTC ISO time, if it is one."""
    times = holder.get("time")
    return to_utc_iso(times.get(key)) if isinstance(times, dict) else None


def _turn(msg: Any, session: str, turn: str | None) -> str | None:
    """The turn a message belongs to: a user message starts one."""
    info = msg.get("info") if isinstance(msg, dict) else None
    if isinstance(info, dict) and info.get("role") == "user" and "id" in info:
        return f"{session}/{info['id']}"
    return turn


def _message(msg: dict, session: str, line: int, turn: str | None, ctx: ParseContext) -> Iterator[Draft]:
    info = msg["info"]
    mid, role = info["id"], info["role"]
    ts = _time(info, "created")
    meta = {k: info[k] for k in ("modelID", "providerID", "agent", "mode") if isinstance(info.get(k), str)} or None
    out: list[Draft] = []
    for part in msg["parts"]:
        if not isinstance(part, dict) or not part.get("type"):
            continue
        pid = str(part.get("id") or content_digest(part))
        key = f"{NAME}/{session}/{mid}/{pid}"
        pts = _time(part, "start") or ts
        ptype = part["type"]
        if ptype == "text":
            extra = {k: True for k in ("synthetic", "ignored") if part.get(k)}
            out.append(Draft(kind=role, text=part.get("text") or "", session_id=session, key=key, turn_id=turn,
                             ts=pts, line=line, uuid=mid, meta={**(meta or {}), **extra} or None))
        elif ptype == "reasoning":
            out.append(Draft(kind="assistant", text=part.get("text") or "", session_id=session, key=key,
                             turn_id=turn, ts=pts, line=line, uuid=mid, meta={**(meta or {}), "thinking": True}))
        elif ptype == "tool":
            out.extend(_tool(part, session, key, turn, pts, line, mid))
        elif ptype == "file":
            label = part.get("filename") or (part.get("source") or {}).get("path") or part.get("mime") or "file"
            out.append(Draft(kind=role, text=f"[file: {label}]", session_id=session, key=key, turn_id=turn,
                             ts=pts, line=line, uuid=mid, media=[part],
                             meta={"mime": part.get("mime")} if part.get("mime") else None))
        elif ptype in _BOOKKEEPING:           # step boundaries, usage and snapshot hashes: not said to anyone
            ctx.ignored += 1
        else:                                 # subtask, agent, patch, compaction, retry, a type newer than this parser
            out.append(Draft(kind="system", text=_other_text(part), session_id=session, key=key, turn_id=turn,
                             ts=pts, line=line, uuid=mid, meta={"subtype": ptype}))
    if isinstance(info.get("error"), dict):
        err = info["error"]
        message = (err.get("data") or {}).get("message") if isinstance(err.get("data"), dict) else None
        out.append(Draft(kind="system", text=f"API error: {err.get('name') or 'error'}"
                                             + (f": {message}" if message else ""),
                         session_id=session, key=f"{NAME}/{session}/{mid}/error", turn_id=turn, ts=ts, line=line,
                         uuid=mid, meta={"subtype": "error"}))
    yield from out


def _tool(part: dict, session: str, key: str, turn, ts, line: int, mid: str) -> list[Draft]:
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    name, call_id = part.get("tool"), str(part.get("callID") or part.get("id"))
    drafts = [Draft(kind="tool_call", text=tool_call_text(name, state.get("input")), session_id=session, key=key,
                    turn_id=turn, ts=ts, line=line, uuid=mid,
                    tool={"name": name, "call_id": call_id, "input": state.get("input")},
                    meta={"title": state["title"]} if state.get("title") else None)]
    status = state.get("status")
    if status in ("completed", "error"):
        text = state.get("output") if status == "completed" else f"Error: {state.get('error')}"
        end = _time(state, "end") or ts
        drafts.append(Draft(kind="tool_result", text=text if isinstance(text, str) else compact_json(text),
                            session_id=session, key=f"{key}/result", turn_id=turn, ts=end, line=line, uuid=mid,
                            tool={"name": name, "call_id": call_id, "is_error": status == "error"},
                            media=[a for a in state.get("attachments") or () if isinstance(a, dict)] or None))
    return drafts


def _other_text(part: dict) -> str:
    ptype = part["type"]
    if ptype == "subtask":
        return f"[subtask for {part.get('agent')}: {part.get('description') or ''}]\n{part.get('prompt') or ''}".strip()
    if ptype == "patch":
        return f"[patch {part.get('hash', '')[:12]}: {', '.join(map(str, part.get('files') or ()))}]"
    if ptype == "compaction":
        return f"[compaction{' (auto)' if part.get('auto') else ''}]"
    if ptype == "agent":
        return f"[agent: {part.get('name')}]"
    if ptype == "retry":
        error = part.get("error") if isinstance(part.get("error"), dict) else {}
        message = (error.get("data") or {}).get("message") if isinstance(error.get("data"), dict) else None
        return f"[retry {part.get('attempt')}: {message or error.get('name') or 'error'}]"
    rest = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
    return compact_json(rest)


def _todos(todos: list, session: str, line: int, turn, info: dict) -> Iterator[Draft]:
    lines = [f"- [{t.get('status', '?')}] {t.get('content', '')}" for t in todos if isinstance(t, dict)]
    text = "Todos:\n" + "\n".join(lines)
    yield Draft(kind="task_state", text=text, session_id=session, key=f"{NAME}/{session}/todos/{content_digest(todos)}",
                turn_id=turn, ts=_time(info, "updated"), line=line,
                meta={"todos": todos})
