"""Reading shared transcripts for format tests."""
from __future__ import annotations

import orjson

from reducers.drafts import BadRecord, ParseContext


def records(path):
    out = []
    for i, line in enumerate(path.read_bytes().splitlines(), 1):
        if line.strip():
            try:
                out.append((i, orjson.loads(line)))
            except orjson.JSONDecodeError:
                pass
    return out


def parse_file(module, path, session=None):
    items = list(module.parse(records(path), ParseContext(path=str(path), source_id=str(path), session=session)))
    return [d for d in items if not isinstance(d, BadRecord)], [b for b in items if isinstance(b, BadRecord)]
