"""Pieces of OpenAI messages both of its APIs share (Chat Completions and
Responses): content parts, tool arguments, timestamps and ids."""
from __future__ import annotations

from typing import Any

import orjson

from reducers.formats.common import flatten_content, to_utc_iso

ID_KEYS = ("id", "session_id", "conversation_id")     # what names a conversation in a body
_TS_KEYS = ("timestamp", "created_at", "created")


def flatten_parts(content: Any) -> str:
    """Chat Completions content parts: text, image_url, input_audio, file,
    refusal. Binary payloads (base64 audio, file data) become placeholders."""
    if not isinstance(content, list):
        return flatten_content(content)
    parts = []
    for part in content:
        ptype = part.get("type") if isinstance(part, dict) else None
        if ptype == "input_audio":
            parts.append("[audio]")
        elif ptype == "file":
            f = part.get("file") if isinstance(part.get("file"), dict) else {}
            parts.append(f"[document: {f['filename']}]" if isinstance(f.get("filename"), str) else "[document]")
        elif ptype == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(part["refusal"])
        else:
            parts.append(flatten_content([part]))
    return "\n".join(p for p in parts if p != "")


def parse_arguments(raw: Any) -> Any:
    """Arguments arrive as a JSON string; keep the string when it is not JSON
    (models do emit broken arguments, and that is worth remembering)."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def message_ts(msg: dict) -> str | None:
    ts = next((to_utc_iso(msg[k]) for k in _TS_KEYS if msg.get(k) is not None), None)
    if ts is None and isinstance(msg.get("extra"), dict):       # mini-swe-agent keeps it in `extra`
        ts = to_utc_iso(msg["extra"].get("timestamp"))
    return ts


def message_uuid(msg: dict) -> str | None:
    return msg["id"] if isinstance(msg.get("id"), str) else None
