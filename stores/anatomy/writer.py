"""Writing anatomy records: each placed after its session's previous record
(compaction cycle, topic, window) under the session file's lock, and
written once (a key the session holds is skipped)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from reducers.anatomy.records import sequence
from reducers.anatomy.slices import measure_text
from stores.anatomy.log import AnatomyLog
from stores.log.ids import IdGenerator


@dataclass
class Pending:
    """A record to write and what placing it needs."""
    record: dict
    user_text: str | None = None
    window: int | None = None
    window_source: str | None = None
    cycle: int | None = None                  # given when the source counts its own compactions
    thread: str | None = None                 # the previous record is the same thread's


@dataclass
class Written:
    added: int = 0
    skipped: int = 0
    unknown_models: list[str] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)


def write_records(store_dir: Path, pending: list[Pending], warn=lambda msg: None, durable: bool = True) -> Written:
    log = AnatomyLog(store_dir)
    ids = IdGenerator()
    out = Written()
    by_session: dict[str, list[Pending]] = {}
    for p in pending:
        by_session.setdefault(p.record["sessionId"], []).append(p)
    for session_id, group in by_session.items():
        with log.session(session_id, warn, durable=durable) as held:
            last: dict[str | None, dict] = {}
            for r in held.records:
                last[(r.get("context") or {}).get("thread")] = r
                last[None] = r
            for p in group:
                record = p.record
                if record["key"] in held.keys:
                    out.skipped += 1
                    continue
                previous = last.get(p.thread) if p.thread is not None else last.get(None)
                for model in sequence(record, previous, user_text=p.user_text, window=p.window,
                                      window_source=p.window_source, cycle=p.cycle):
                    if model not in out.unknown_models:
                        out.unknown_models.append(model)
                record["turnId"] = ids.new()
                held.add(record)
                last[p.thread] = last[None] = record
                out.added += 1
                out.records.append(record)
    return out


def spill_measure(spills):
    """measure_text that counts a string spilled to a temp file (a huge
    line) by the file's size; its tokens are estimated at 4 bytes each
    rather than read back."""
    if spills is None:
        return measure_text

    def measure(text: str) -> tuple[int, int]:
        if not spills.holds_marker(text):
            return measure_text(text)
        nbytes = tokens = 0
        for part in spills.split(text):
            if isinstance(part, str):
                b, t = measure_text(part)
            else:
                b = os.path.getsize(part.path)
                t = b // 4
            nbytes += b
            tokens += t
        return nbytes, tokens
    return measure
