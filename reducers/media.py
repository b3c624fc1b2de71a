"""Media blocks (images, documents, audio) inside transcripts: what the
event records about each one, and redaction that leaves the payload alone.

The event's text keeps a placeholder ("[image]") where the block was; the
block itself, exactly as the source gave it, is stored whole as an
attachment in the artifact store and listed in `meta.attachments`."""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from reducers.formats.common import sorted_json
from reducers.redact import redact

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?[;,]")
_PAYLOAD_KEYS = frozenset({"data", "result", "file_data"})      # base64 payloads
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
# Types whose bytes are text: a base64 payload of one is decoded, redacted and
# encoded again (an .env attached as data:text/plain;base64,… holds its keys).
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/yaml", "application/x-yaml",
                         "application/toml", "application/x-sh", "application/javascript", "application/sql",
                         "application/x-www-form-urlencoded", "application/x-ndjson", "application/jsonl"})


def block_bytes(block: dict) -> bytes:
    """The bytes an attachment is stored as: keys sorted, so the same block
    always has the same content address."""
    return sorted_json(block)


def media_type(block: dict) -> str | None:
    """The MIME type a block declares, in any of the formats' layouts."""
    for holder in (block, block.get("source"), block.get("image_url"), block.get("file"), block.get("input_audio")):
        if not isinstance(holder, dict):
            continue
        for key in ("media_type", "mime_type", "output_format", "format"):
            if isinstance(holder.get(key), str):
                return holder[key]
        for key in ("url", "image_url", "data", "file_data"):       # a data: URL names its type
            m = _DATA_URL.match(holder[key]) if isinstance(holder.get(key), str) else None
            if m and m.group(1):
                return m.group(1)
    return None


def redact_block(value: Any, key: str | None = None, mime: str | None = None) -> tuple[Any, int]:
    """Redact a block's strings (captions, URLs with tokens in them) and the
    text inside a text document's base64, but not a binary payload: a
    key-shaped run inside an image's base64 is a coincidence, not a secret.
    `mime` is the type the enclosing block declares."""
    if isinstance(value, dict):
        mime = _declared(value) or mime
        encoded = value.get("type") == "base64" or value.get("encoding") == "base64"     # {"type": "base64", "data"}
        out, n = {}, 0
        for k, v in value.items():
            if encoded and k == "data" and isinstance(v, str):
                out[k], m = _redact_payload(v, mime)
            else:
                out[k], m = redact_block(v, k, mime)
            n += m
        return (out, n) if n else (value, 0)
    if isinstance(value, list):
        items = [redact_block(v, key, mime) for v in value]
        n = sum(m for _, m in items)
        return ([v for v, _ in items], n) if n else (value, 0)
    if isinstance(value, str):
        if _is_payload(key, value):
            return _redact_payload(value, mime)
        text, n = redact(value)
        return (text, n) if n else (value, 0)
    return value, 0


def _declared(block: dict) -> str | None:
    for k in ("media_type", "mime_type", "mimeType", "mime"):
        if isinstance(block.get(k), str):
            return block[k]
    return None


def is_text_type(mime: str | None) -> bool:
    if not mime:
        return False
    mime = mime.split(";", 1)[0].strip().lower()
    return mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml", "+yaml"))


def _redact_payload(value: str, mime: str | None) -> tuple[str, int]:
    """A base64 payload: redacted inside when it is a text type's bytes
    (decoded, redacted, encoded again), else left whole."""
    head, body = "", value
    if value.startswith("data:"):
        comma = value.find(",")
        head, body = value[:comma + 1], value[comma + 1:]
        m = _DATA_URL.match(head)
        mime = m.group(1) if m and m.group(1) else mime
    if not is_text_type(mime):
        return value, 0
    try:
        text = base64.b64decode("".join(body.split()), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):            # not base64 of UTF-8 text after all: bytes, kept
        return value, 0
    redacted, n = redact(text)
    return (head + base64.b64encode(redacted.encode("utf-8")).decode("ascii"), n) if n else (value, 0)


def looks_like_payload(head: str) -> bool:
    """The start of a string too long to hold (a spilled one): base64 bytes
    (a data: URL that says so, or a long run of the base64 alphabet)."""
    if head.startswith("data:"):
        return ";base64," in head[:head.find(",", 0, 256) + 1]
    return len(head) > 256 and _BASE64.fullmatch(head, 0, 4096) is not None


def _is_payload(key: str | None, value: str) -> bool:
    """Base64 bytes (an image, a PDF): a data: URL that says so, or a long
    run of base64 under data/result/file_data. A text document's data is
    text (an .env file has no spaces either), and so is data:text/plain,…"""
    if value.startswith("data:"):
        return ";base64," in value[:value.find(",", 0, 256) + 1]
    return key in _PAYLOAD_KEYS and len(value) > 256 and _BASE64.fullmatch(value, 0, 4096) is not None
