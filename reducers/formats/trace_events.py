"""The `trace` format: our own events, as `trace export` writes them.

Importing keeps what the source store decided (id, session, turn, ts,
kind, text, tool, artifact, tokens, source, meta); the receiving log gives
each line its own seq, ingested_at and hash chain. The dedupe key is the
event's original source key, so exporting a store and ingesting it back —
into itself or into a store that later ingests the original transcript —
adds nothing twice."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.event_schema import trace_record_problem

NAME = "trace"
_REQUIRED = ("id", "kind", "text", "session_id")


def sniff(samples: list) -> bool:
    dicts = [s for s in samples if isinstance(s, dict)]
    return bool(dicts) and all("seq" in d and "hash" in d and "kind" in d and "id" in d for d in dicts)


def parse(records: Iterable[tuple[int, Any]], ctx: ParseContext) -> Iterator[Draft | BadRecord]:
    for line, rec in records:
        if not isinstance(rec, dict):
            yield BadRecord(line, "not a JSON object")
            continue
        missing = [f for f in _REQUIRED if f not in rec]
        if missing:
            yield BadRecord(line, f"not a trace event: missing {', '.join(missing)}")
            continue
        problem = trace_record_problem(rec)       # every field's type, before anything is built from it
        if problem:
            yield BadRecord(line, problem)
            continue
        source = rec.get("source") or {}
        keys = [source.get("key") or f"id/{rec['id']}", *(source.get("merged") or ())]
        if ctx.session:            # a copy into another session: new events, new ids
            keys = [f"{k}@{ctx.session}" for k in keys]
        yield Draft(
            kind=rec["kind"], text=rec["text"],
            session_id=ctx.session or rec["session_id"],
            key=keys[0],
            turn_id=rec.get("turn_id"), ts=rec.get("ts"), tool=rec.get("tool"),
            line=source.get("line"), uuid=source.get("uuid"), meta=rec.get("meta"),
            event_id=None if ctx.session else rec["id"], tokens=rec.get("tokens"), artifact=rec.get("artifact"),
            artifact_text=rec.get("artifact_content"),
            media=rec.get("attachments_content"),
            merged_keys=keys[1:],
            source={**source, "key": keys[0], **({"merged": keys[1:]} if keys[1:] else {})} if source else None,
        )
