"""Media blocks (images, documents, audio) inside transcripts: what the
event records about each one, and redaction that leaves the payload's
bytes alone unless a secret is in them.

The event's text keeps a placeholder ("[image]") where the block was; the
block itself, exactly as the source gave it, is stored whole as an
attachment in the artifact store and listed in `meta.attachments`."""
from __future__ import annotations

import re
from typing import Any

from reducers.formats.common import sorted_json
from reducers.redact import redact
from reducers.redact_payload import redact_base64

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?[;,]")
_PAYLOAD_KEYS = frozenset({"data", "result", "file_data"})      # base64 payloads
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


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


def redact_block(value: Any, key: str | None = None) -> tuple[Any, int]:
    """Redact a block's strings (captions, URLs with tokens in them) and the
    bytes inside its base64 payloads (reducers/redact_payload.py), but not
    the base64 text itself: a key-shaped run there is a coincidence."""
    if isinstance(value, dict):
        encoded = value.get("type") == "base64" or value.get("encoding") == "base64"     # {"type": "base64", "data"}
        out, n = {}, 0
        for k, v in value.items():
            if encoded and k == "data" and isinstance(v, str):
                out[k], m = _redact_payload(v)
            else:
                out[k], m = redact_block(v, k)
            n += m
        return (out, n) if n else (value, 0)
    if isinstance(value, list):
        items = [redact_block(v, key) for v in value]
        n = sum(m for _, m in items)
        return ([v for v, _ in items], n) if n else (value, 0)
    if isinstance(value, str):
        if _is_payload(key, value):
            return _redact_payload(value)
        text, n = redact(value)
        return (text, n) if n else (value, 0)
    return value, 0


def _redact_payload(value: str) -> tuple[str, int]:
    """A base64 payload: its bytes are scanned for secrets (text of any
    ASCII-compatible encoding, the strings inside a binary) and encoded
    again only when one was found; a key-shaped run in the base64 text
    itself is a coincidence. A payload that is not base64 after all is text."""
    head, body = "", value
    if value.startswith("data:"):
        comma = value.find(",")
        head, body = value[:comma + 1], value[comma + 1:]
    done = redact_base64(body)
    if done is None:
        text, n = redact(body)
        return (head + text, n) if n else (value, 0)
    encoded, n = done
    return (head + encoded, n) if n else (value, 0)


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
