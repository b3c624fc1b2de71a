"""The shape of a logged event, checked before it is appended and assumed
(safely) when it is read back.

Three doors, one set of rules:
  * `trace_record_problem(record)`: a line of the `trace` format (what
    `trace export` writes) before it becomes a draft: its reason names the
    field, for `file:line: reason`;
  * `draft_problem(draft)`: what any parser produced, checked at the append
    chokepoint (a parser bug must not reach the log either);
  * `event_problem(event)`: a sealed log line, for `trace verify`.

A line written before these checks existed may break them. The log is
append-only, so it stays as written; readers that derive things from it
(state, indexes, stats, recall, context) take `conform(event)`: the same
event with each wrong-typed field read as the neutral value (no tool, no
timestamp, a recounted token figure), so one old line costs nothing else."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

from reducers.event_kinds import KINDS
from reducers.tokens import count_tokens

if TYPE_CHECKING:
    from reducers.drafts import Draft

_HEX64 = re.compile(r"[0-9a-f]{64}")
_KINDS = frozenset(KINDS)
MAX_ID_CHARS = 128


def _is_str(v) -> bool:
    return type(v) is str


def _opt_str(v) -> bool:
    return v is None or type(v) is str


def _count(v) -> bool:
    return type(v) is int and v >= 0


def _opt_count(v) -> bool:
    return v is None or _count(v)


def _id(v) -> bool:
    return type(v) is str and 0 < len(v) <= MAX_ID_CHARS and _unicode(v)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unicode(v: str) -> bool:
    """Valid Unicode: no lone surrogate (a JSON "\\ud800" escape, or bytes
    a lenient reader let through). Identifiers go to SQLite and into JSON
    keys, which take only valid text; a text field may hold one."""
    return v.isascii() or _SURROGATE.search(v) is None


def _ident(v) -> bool:
    return type(v) is str and _unicode(v)


def _opt_ident(v) -> bool:
    return v is None or _ident(v)


# Marks an artifact or attachment reference an imported event brought
# without its content (the store never held it): verify notes it, and does
# not report it missing.
NOT_CARRIED = "not_carried"


def _artifact_id(v) -> bool:
    return type(v) is str and _HEX64.fullmatch(v) is not None


def _tool_problem(tool) -> str | None:
    if tool is None:
        return None
    if type(tool) is not dict:
        return "tool is not an object"
    for name in ("name", "call_id"):
        if not _opt_str(tool.get(name)):
            return f"tool.{name} is not a string"
    if tool.get("is_error") not in (None, True, False):
        return "tool.is_error is not true or false"
    return None


def _artifact_problem(artifact) -> str | None:
    if artifact is None:
        return None
    if type(artifact) is not dict or not _artifact_id(artifact.get("id")):
        return "artifact is not {id: <64 hex>, ...}"
    for name in ("bytes", "tokens"):
        if not _opt_count(artifact.get(name)):
            return f"artifact.{name} is not a whole number (0 or more)"
    return None


def _source_problem(source) -> str | None:
    if source is None:
        return None
    if type(source) is not dict:
        return "source is not an object"
    for name in ("key", "format", "path", "parent"):
        if not _opt_ident(source.get(name)):
            return f"source.{name} is not a string of valid Unicode"
    if type(source.get("uuid")) not in (str, int, type(None)):
        return "source.uuid is not a string"
    line = source.get("line")
    if line is not None and type(line) is not int:
        return "source.line is not a whole number"
    merged = source.get("merged")
    if merged is not None and not (type(merged) is list and all(_ident(k) for k in merged)):
        return "source.merged is not a list of strings"
    return None


def _meta_problem(meta) -> str | None:
    if meta is None:
        return None
    if type(meta) is not dict:
        return "meta is not an object"
    attachments = meta.get("attachments")
    if attachments is not None and not (
            type(attachments) is list
            and all(type(a) is dict and _artifact_id(a.get("id")) for a in attachments)):
        return "meta.attachments is not a list of {id: <64 hex>, ...}"
    return None


# (field, check, reason) for the scalar fields every event carries.
_SCALARS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("session_id", lambda v: _ident(v) and v != "", "session_id is not a non-empty string of valid Unicode"),
    ("turn_id", _opt_ident, "turn_id is not a string of valid Unicode"),
    ("ts", _opt_str, "ts is not a string"),
    ("text", _is_str, "text is not a string"),
)


def _common_problem(get: Callable[[str], Any], tokens_required: bool) -> str | None:
    kind = get("kind")
    if type(kind) is not str or kind not in _KINDS:
        return f"unknown kind {kind!r}"
    for name, ok, reason in _SCALARS:
        if not ok(get(name)):
            return reason
    tokens = get("tokens")
    if not (_count(tokens) if tokens_required else _opt_count(tokens)):
        return "tokens is not a whole number (0 or more)"
    return (_tool_problem(get("tool")) or _artifact_problem(get("artifact"))
            or _source_problem(get("source")) or _meta_problem(get("meta")))


def trace_record_problem(rec: dict) -> str | None:
    """Why a `trace`-format record cannot be imported, or None."""
    if not _id(rec.get("id")):
        return f"id is not a string of 1-{MAX_ID_CHARS} characters of valid Unicode"
    problem = _common_problem(rec.get, tokens_required=False)
    if problem:
        return problem
    if not _opt_str(rec.get("artifact_content")):
        return "artifact_content is not a string"
    media = rec.get("attachments_content")
    if media is not None and not (type(media) is list and all(type(b) is dict for b in media)):
        return "attachments_content is not a list of objects"
    return None


def draft_problem(d: Draft) -> str | None:
    """Why a parser's draft must not be appended, or None (the backstop at
    the chokepoint: every format's output passes here)."""
    problem = _common_problem(lambda name: getattr(d, name), tokens_required=False)
    if problem:
        return problem
    if not _ident(d.key) or not all(_ident(k) for k in d.merged_keys):
        return "its dedupe key is not a string of valid Unicode"
    if d.event_id is not None and not _id(d.event_id):
        return f"id is not a string of 1-{MAX_ID_CHARS} characters of valid Unicode"
    if not _opt_str(d.artifact_text):
        return "artifact content is not a string"
    if d.media is not None and not (type(d.media) is list and all(type(b) is dict for b in d.media)):
        return "attachments are not a list of objects"
    return None


def event_problem(event: dict) -> str | None:
    """Why a sealed log line is not a well-formed event, or None."""
    if not _id(event.get("id")):
        return "id is not a string"
    if type(event.get("seq")) is not int:
        return "seq is not a whole number"
    return _common_problem(event.get, tokens_required=True)


def conform(event: dict) -> dict:
    """The event as a reader may rely on it: the event itself when it is
    well formed (nearly always: one cheap check), else a copy with each
    wrong-typed field read as its neutral value. Never written back."""
    if event_problem(event) is None:
        return event
    out = dict(event)
    if not _id(out.get("id")):
        out["id"] = str(out.get("id"))[:MAX_ID_CHARS] or "?"
    kind = out.get("kind")
    if type(kind) is not str or kind not in _KINDS:
        out["kind"] = "system"
    if not _is_str(out.get("text")):
        out["text"] = "" if out.get("text") is None else _as_text(out["text"])
    sid = out.get("session_id")
    if type(sid) is not str or not sid:
        out["session_id"] = _as_text(sid) or "unknown"
    for name in ("turn_id", "ts"):
        if not _opt_str(out.get(name)):
            out[name] = None
    if not _count(out.get("tokens")):
        out["tokens"] = count_tokens(out["text"])
    for name, problem in (("tool", _tool_problem), ("artifact", _artifact_problem),
                          ("source", _source_problem), ("meta", _meta_problem)):
        if name in out and problem(out[name]):
            out[name] = None
    return out


def _as_text(value) -> str:
    if value is None:
        return ""
    if type(value) is str:
        return value
    try:
        return str(value)[:1000]
    except (ValueError, RecursionError):      # a 5,000-digit number, a value nested past the stack
        return f"<{type(value).__name__}>"
