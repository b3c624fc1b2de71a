"""Claude Code's lines other than user and assistant messages: summaries,
titles, system lines (compaction boundaries, errors, the SDK stream's init
and result), attachments the model was shown, queued input, wrapper records
and lines of a type this parser does not know. Each is read on its own into
at most one `system` event; the parser (claude_code.py) routes lines here.
Also the sub-agent message a progress line relays (`agent_progress`)."""
from __future__ import annotations

import hashlib
from typing import Iterator

from reducers.drafts import Draft
from reducers.formats.claude_code_line import PREFIX, Line, draft
from reducers.formats.claude_code_text import attachment_text, system_error_text
from reducers.formats.common import compact_json

TITLES = {"ai-title": ("aiTitle", "ai"), "custom-title": ("customTitle", "user"), "agent-name": ("agentName", "agent")}
# Fields every line carries; what else a line of an unknown type holds is kept
ENVELOPE = frozenset(("type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "timestamp", "cwd", "version",
                       "gitBranch", "isSidechain", "userType", "slug", "entrypoint", "agentId"))
SYSTEM_SAID = ("subtype", "content", "level", "isMeta")   # a system line's fields its event has already


def summary(rec: dict, at: Line) -> Iterator[Draft]:
    text = rec.get("summary") if isinstance(rec.get("summary"), str) else rec.get("text")
    if not isinstance(text, str) or not text:
        return
    leaf = rec.get("leafUuid")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    # Keyed by what it summarises, not the line: the same summary written
    # into two files of one session is one event.
    event = draft(at, "system", text, 0, meta={"subtype": "summary", "leafUuid": leaf})
    event.key = f"{PREFIX}/{at.session_id}/summary/{leaf}/{digest}"
    yield event


def title(rec: dict, at: Line, seen: set[str]) -> Iterator[Draft]:
    """The session's title (named by Claude, or by the user): written
    again and again, kept once per session and wording."""
    field, by = TITLES[rec["type"]]
    text = rec.get(field)
    if not isinstance(text, str) or not text.strip():
        return
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    key = f"{PREFIX}/{at.session_id}/title/{by}/{digest}"
    if key in seen:
        return
    seen.add(key)
    event = draft(at, "system", text, 0, meta={"subtype": "title", "by": by})
    event.key = key
    yield event


def system(rec: dict, at: Line) -> Iterator[Draft]:
    subtype = rec.get("subtype")
    if subtype == "compact_boundary":
        cm = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
        details = " ".join(f"{k}={cm[k]}" for k in ("trigger", "preTokens") if k in cm)
        yield draft(at, "system", f"[compact_boundary] {details}".rstrip(), 0,
                    meta={"subtype": "compact_boundary"})
        return
    if subtype == "init" and "session_id" in rec:     # the SDK stream's opening line: what the run had
        yield from sdk_init(rec, at)
        return
    content = rec.get("content")
    content = content if isinstance(content, str) and content.strip() else ""
    errors = system_error_text(rec)                # an API error being retried, hook errors
    text = f"{content}\n{errors}" if content and errors else content or errors
    if text:
        # what else it says (the models of a refusal fallback, the hooks that ran) as written
        fields = {k: v for k, v in rec.items() if k not in ENVELOPE and k not in SYSTEM_SAID and v is not None}
        meta = {"subtype": subtype} if isinstance(subtype, str) else {}
        yield draft(at, "system", text, 0, meta={**meta, "fields": fields} if fields else meta or None)


def sdk_init(rec: dict, at: Line) -> Iterator[Draft]:
    said = {k: v for k, v in rec.items() if k not in ENVELOPE and k not in ("subtype", "session_id")}
    tools = rec.get("tools") if isinstance(rec.get("tools"), list) else []
    text = "\n".join(f"{label}: {value}" for label, value in (
        ("model", rec.get("model")), ("cwd", rec.get("cwd")), ("permission mode", rec.get("permissionMode")),
        ("tools", ", ".join(t for t in tools if isinstance(t, str)))) if isinstance(value, str) and value)
    yield draft(at, "system", text or "[init]", 0, meta={"subtype": "init", "fields": said})


def run_result(rec: dict, at: Line) -> Iterator[Draft]:
    """The SDK stream's last line: how the run ended. Its `result` is the
    final reply's text, which the assistant line before it already holds,
    so the event says how it ended (and why, when it failed) and keeps
    the figures beside it. A session log's own `result` lines (a
    background task's outcome) are read by `state`."""
    if "session_id" not in rec or not isinstance(rec.get("subtype"), str):
        return
    subtype = rec["subtype"]
    figures = " ".join(f"{label}={rec[k]}" for k, label in (
        ("num_turns", "turns"), ("duration_ms", "duration_ms"), ("total_cost_usd", "cost_usd"))
        if isinstance(rec.get(k), (int, float)) and not isinstance(rec.get(k), bool))
    text = f"[result {subtype}] {figures}".rstrip()
    failed = rec.get("is_error") is True or subtype != "success"
    errors = rec.get("errors") if isinstance(rec.get("errors"), list) else []
    why = [e if isinstance(e, str) else compact_json(e) for e in errors]
    if failed and isinstance(rec.get("result"), str) and rec["result"]:
        why.append(rec["result"])
    if why:
        text += "\n" + "\n".join(why)
    fields = {k: v for k, v in rec.items() if k not in ENVELOPE and k not in ("subtype", "session_id")}
    yield draft(at, "system", text, 0, meta={"subtype": "result", "is_error": failed, "fields": fields})


# The one text a line of session state holds, when it has one: its event's text
_STATE_TEXT = {"last-prompt": ("lastPrompt",), "result": ("result", "summary")}


def state(rec: dict, at: Line, seen: set[str]) -> Draft | None:
    """A line of what the session said about itself beside the conversation
    (the prompt a resume offers, a PR or an artifact it linked, the
    worktree it entered, the folder it moved to, a background task's
    result): a system event holding its fields as written, its one text
    as the text when it has one. Claude Code writes them again on resume
    and compaction with a new time: kept once per session and content.
    None when the line says nothing or repeats one already kept."""
    said = {k: v for k, v in rec.items() if k not in ENVELOPE and v is not None}
    if not said:
        return None
    text, path = said, _STATE_TEXT.get(rec["type"], ())
    for k in path:
        text = text.get(k) if isinstance(text, dict) else None
    if not (isinstance(text, str) and text.strip()):
        if rec["type"] == "last-prompt":           # no prompt (null): only the leaf it pointed at
            return None
        text = compact_json(said)
    elif len(path) == 1:
        said.pop(path[0])                         # the text is the event's; the rest stays beside it
    digest = hashlib.sha256(compact_json(said).encode("utf-8", "surrogatepass") + b"\0"
                            + text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    key = f"{PREFIX}/{at.session_id}/{rec['type']}/{digest}"
    if key in seen:
        return None
    seen.add(key)
    event = draft(at, "system", text, 0, meta={"subtype": rec["type"], "fields": said})
    event.key = key
    return event


def unknown(rec: dict, at: Line) -> Iterator[Draft]:
    """A line of a type this parser does not know and without a message
    (a newer version's bookkeeping, a pointer to the next session): kept
    as a system event holding what it says beyond the usual fields."""
    said = {k: v for k, v in rec.items() if k not in ENVELOPE}
    if said:
        yield draft(at, "system", compact_json(said), 0, meta={"subtype": rec["type"]})


def wrapper(rec: dict, at: Line) -> Iterator[Draft]:
    """A record a tool that exported the session wrote beside Claude
    Code's own lines (hive-mind's {"_type": "hive-mind-meta", ...}):
    not the model's, so a system event holding the record as written."""
    wrapped = rec["wrapped"]
    yield draft(at, "system", compact_json(wrapped), 0,
                meta={"subtype": "wrapper", "wrapper": wrapped["_type"]})


def attachment(rec: dict, at: Line) -> Iterator[Draft]:
    att = rec.get("attachment")
    if not isinstance(att, dict) or not isinstance(att.get("type"), str):
        return
    text = attachment_text(att)
    if text and text.strip():
        extra = {"attachment": att["type"]}
        if att["type"] in ("edited_text_file", "file") and isinstance(att.get("filename"), str):
            extra["file"] = att["filename"]
        yield draft(at, "system", text, 0, meta=extra)


def queue(rec: dict, at: Line) -> Iterator[Draft]:
    """Text typed while the agent worked, as the input queue saw it
    (added, removed to steer the running turn...). It may reach the
    model later as a user line or a queued_command attachment; here it
    is kept as it was queued."""
    content = rec.get("content")
    if isinstance(content, str) and content.strip():
        operation = rec.get("operation")
        yield draft(at, "system", content, 0, meta={
            "subtype": "queue", **({"operation": operation} if isinstance(operation, str) else {})})


def agent_progress(rec: dict) -> dict | None:
    """The sub-agent message an `agent_progress` line relays (Claude Code
    2.1.x, foreground agents), as a sidechain line. The same message, same
    uuid, is in `subagents/agent-<id>.jsonl`: it has the same key there, so
    whichever copy is read second adds nothing; the main file alone keeps
    it too. Other progress (hooks, running commands) stays bookkeeping."""
    data = rec.get("data")
    if not (isinstance(data, dict) and data.get("type") == "agent_progress"):
        return None
    message = data.get("message")
    if not (isinstance(message, dict) and message.get("type") in ("user", "assistant")
            and isinstance(message.get("message"), dict)):
        return None
    agent = data.get("agentId") or message.get("agentId")
    return {"sessionId": rec.get("sessionId"), **message, "isSidechain": True,
            **({"agentId": agent} if isinstance(agent, str) else {})}
