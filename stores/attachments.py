"""Storing a draft's media blocks (images, documents, audio) whole in the
artifact store, one content-addressed attachment per block.

A block from a very long line may hold spill markers in place of strings
over a megabyte (stores/big_lines.py): its bytes are then streamed, the
spilled text JSON-escaped back where its marker stood, so the attachment
is the block as the source had it -- a spilled text (a log, a document's
data) redacted on the way, as the rest of the block was; a spilled base64
payload (an image) kept byte for byte."""
from __future__ import annotations

import json
import re
from typing import Iterator

import orjson

from reducers.media import block_bytes, looks_like_payload, media_type
from reducers.redact_stream import StreamRedactor
from stores.artifacts import ArtifactStore
from stores.big_lines import SpillRegistry


def store_media(blocks: list[dict], artifacts: ArtifactStore, spills: SpillRegistry | None = None, *,
                redact_secrets: bool = False) -> list[dict]:
    """Store each block; returns what `meta.attachments` records of them."""
    out = []
    for block in blocks:
        data = block_bytes(block)
        if spills is not None and spills.spills and orjson.dumps(spills.prefix)[1:-1] in data:
            artifact_id, size = artifacts.put_chunks(_unspilled(data, spills, redact_secrets))
        else:
            artifact_id, size = artifacts.put(data)
        entry = {"id": artifact_id, "bytes": size, "type": block.get("type")}
        mime = media_type(block)
        if mime:
            entry["media_type"] = mime
        out.append(entry)
    return out


def _unspilled(data: bytes, spills: SpillRegistry, redact_secrets: bool) -> Iterator[bytes]:
    escaped = {orjson.dumps(marker)[1:-1]: spill for marker, spill in spills.spills.items()}
    pattern = re.compile(b"|".join(re.escape(k) for k in escaped))
    pos = 0
    for m in pattern.finditer(data):
        yield data[pos:m.start()]
        pieces = spills.iter_text(escaped[m.group()])
        yield from (_json_string_body(t) for t in (_redacted(pieces) if redact_secrets else pieces))
        pos = m.end()
    yield data[pos:]


def _redacted(pieces: Iterator[str]) -> Iterator[str]:
    """A spilled string as it would be redacted whole, unless it is a base64
    payload (judged by its first piece)."""
    first = next(pieces, "")
    if looks_like_payload(first):
        yield first
        yield from pieces
        return
    redactor = StreamRedactor()
    yield redactor.feed(first)
    for piece in pieces:
        yield redactor.feed(piece)
    yield redactor.close()


def _json_string_body(text: str) -> bytes:
    try:
        return orjson.dumps(text)[1:-1]
    except TypeError:                      # a lone surrogate
        return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
