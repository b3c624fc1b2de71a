"""Drafts: events as a format parser produces them, before the log assigns
id, seq and hash. Parsers are pure: records in, drafts (and bad records) out.

A draft's `key` is its dedupe identity. It is derived only from the source's
own content and ids (never the wall clock), so parsing the same transcript
twice yields the same keys and re-ingest adds nothing twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator

from reducers.event_kinds import KINDS  # noqa: F401 - drafts are of these kinds; older imports take it from here


@dataclass(slots=True)
class Draft:
    kind: str
    text: str
    session_id: str
    key: str                            # dedupe identity, stable across re-parses: "<format>/<session>/…"
    turn_id: str | None = None
    ts: str | None = None               # ISO 8601 UTC ("...Z"), None when the source has none
    tool: dict | None = None            # {name, call_id, input} | {name, call_id, is_error}
    line: int | None = None             # 1-based source line (or array index + 1)
    uuid: str | None = None             # the source's own record id, when it has one
    meta: dict | None = None            # format extras: sidechain, role, model, subtype...
    merge_group: str | None = None      # adjacent drafts sharing it merge into one event
    # Set only by the trace format (events that already lived in a log):
    event_id: str | None = None
    tokens: int | None = None
    artifact: dict | None = None
    artifact_text: str | None = None    # full payload carried by an export line
    ingested_at: str | None = None
    merged_keys: list[str] = field(default_factory=list)
    source: dict | None = None          # the original `source` of a re-ingested exported event
    media: list[dict] | None = None     # image/document/audio blocks, kept whole as attachments
    parent: str | None = None           # the source record this one follows (a conversation tree's edge)

    def all_keys(self) -> list[str]:
        return [self.key, *self.merged_keys] if self.merged_keys else [self.key]


@dataclass(slots=True)
class BadRecord:
    """A source record that could not be turned into events: reported as
    `file:line: reason`, never silently dropped."""
    line: int
    reason: str


@dataclass(slots=True)
class Pending:
    """Source records a parser could not place yet because the file is
    still being written (lines before the one naming their session): not
    written now, read again on the next pass with what follows."""
    records: int


@dataclass(slots=True)
class ParseContext:
    path: str                           # display path ("-" for stdin)
    source_id: str                      # absolute path, or "-": input to derived session ids
    session: str | None = None          # --session override
    options: dict[str, Any] = field(default_factory=dict)
    growing: bool = False               # live follow or a hook: the file's end is not its last line yet
    ignored: int = 0                    # records read that made no event by design (bookkeeping, repeats): counted


def counted(items: Iterable, ctx: ParseContext) -> Iterator:
    """What one source record gave (drafts, errors, a pending hold), passed on;
    a record that gave nothing is counted in ctx.ignored: the one rule every
    reader follows, so bookkeeping and repeats are never silently dropped."""
    made = 0
    for item in items:
        made += 1
        yield item
    if not made:
        ctx.ignored += 1


def joins(prev: Draft | None, d: Draft) -> bool:
    """Whether `d` merges into `prev`, the draft before it (merge_adjacent's rule)."""
    return (prev is not None and bool(d.merge_group) and prev.merge_group == d.merge_group
            and prev.kind == d.kind and prev.tool is None and d.tool is None)


def merge_adjacent(drafts: list[Draft]) -> list[Draft]:
    """Merge runs of adjacent drafts that share a merge_group (the blocks of
    one streamed assistant message) into one event; order is kept.

    Runs after dedupe, so a message whose first lines were ingested earlier
    yields a continuation event holding only the new blocks. The input
    drafts are never modified: a run's head is copied before it absorbs."""
    out: list[Draft] = []
    copied: set[int] = set()
    for d in drafts:
        prev = out[-1] if out else None
        if joins(prev, d):
            if id(prev) not in copied:
                prev = out[-1] = replace(prev, merged_keys=list(prev.merged_keys))
                copied.add(id(prev))
            prev.text = f"{prev.text}\n\n{d.text}" if prev.text and d.text else (prev.text or d.text)
            prev.merged_keys.extend(d.all_keys())
            if d.media:
                prev.media = [*(prev.media or ()), *d.media]
            if d.meta or prev.meta:
                merged = {**(d.meta or {}), **(prev.meta or {})}
                if bool((prev.meta or {}).get("thinking")) != bool((d.meta or {}).get("thinking")):
                    merged.pop("thinking", None)      # thinking and visible text now share one event
                prev.meta = merged or None
            continue
        out.append(d)
    return out
