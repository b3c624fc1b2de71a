"""Storing a draft's media blocks (images, documents, audio) whole in the
artifact store, one content-addressed attachment per block.

A block from a very long line may hold spill markers in place of strings
over a megabyte (stores/ingest/big_lines.py): its bytes are then streamed, the
spilled text JSON-escaped back where its marker stood, so the attachment
is the block as the source had it -- a spilled text (a log, a document's
data) redacted on the way, as the rest of the block was; a spilled base64
payload (an image) kept byte for byte unless its bytes hold a secret."""
from __future__ import annotations

import json
import re
from typing import Callable, Iterator

import orjson

from reducers.media import block_bytes, looks_like_payload, media_type
from reducers.redact_payload import redacted_base64, secrets_in_base64
from reducers.redact_stream import StreamRedactor
from stores.log.artifacts import ArtifactStore
from stores.ingest.big_lines import SpillRegistry


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
        spill = escaped[m.group()]
        pieces = _redacted(lambda: spills.iter_text(spill)) if redact_secrets else spills.iter_text(spill)
        yield from (_json_string_body(t) for t in pieces)
        pos = m.end()
    yield data[pos:]


def _redacted(read: Callable[[], Iterator[str]]) -> Iterator[str]:
    """A spilled string (`read()` gives its pieces, again each call) as it
    would be redacted whole. A base64 payload (judged by its first piece)
    has its bytes scanned as they stream, and is read a second time,
    encoded again with the secrets replaced, only if it held one; else it
    is kept byte for byte. One that is not base64 after all is text."""
    pieces = read()
    first = next(pieces, "")
    if looks_like_payload(first):
        head = first[:first.find(",") + 1] if first.startswith("data:") else ""
        found = secrets_in_base64(_without_head(read(), len(head)))
        if found == 0:
            yield first
            yield from pieces
            return
        if found is not None:
            yield head
            yield from redacted_base64(_without_head(read(), len(head)))
            return
        pieces = read()
        first = next(pieces, "")
    redactor = StreamRedactor()
    yield redactor.feed(first)
    for piece in pieces:
        yield redactor.feed(piece)
    yield redactor.close()


def _without_head(pieces: Iterator[str], skip: int) -> Iterator[str]:
    """The pieces less their first `skip` characters (a data: URL's head)."""
    for piece in pieces:
        if skip:
            piece, skip = piece[skip:], max(skip - len(piece), 0)
        yield piece


def _json_string_body(text: str) -> bytes:
    try:
        return orjson.dumps(text)[1:-1]
    except TypeError:                      # a lone surrogate
        return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
