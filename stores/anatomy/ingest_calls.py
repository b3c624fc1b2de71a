"""The anatomy side channel of `trace ingest`: a collector watches the
records and drafts of a source as it is parsed (reducers/anatomy/
transcript_calls.py), and once the source's events are durable its model
calls are written as anatomy records. Records are keyed by the call, so
re-ingesting a file (cron does, every few minutes, whenever it grew) adds
none twice."""
from __future__ import annotations

import os

from reducers.anatomy.transcript_calls import CallCollector
from stores.anatomy.writer import Pending, spill_measure, write_records


def collector_for(fmt: str | None, display: str, session: str | None, spills) -> CallCollector | None:
    """The collector for a source of this format; None when the format
    shows no model calls, or TRACE_ANATOMY_INGEST=off turns records off."""
    if not CallCollector.wanted(fmt) or os.environ.get("TRACE_ANATOMY_INGEST", "").strip().lower() in ("off", "0", "no"):
        return None
    return CallCollector(fmt, display, session, measure=spill_measure(spills), strict=bool(os.environ.get("TRACE_DEBUG")))


def write_calls(store_dir, collector: CallCollector, warn) -> int:
    """Write what the collector found; returns the records added. Nothing
    here is an ingest error: the events are in the log whatever happens."""
    items = collector.finish()
    for problem in collector.problems[:5]:
        warn(problem)
    if not items:
        return 0
    written = write_records(store_dir, [Pending(record=i["record"], user_text=i["user_text"], window=i["window"],
                                                window_source="transcript" if i["window"] else None,
                                                cycle=i["cycle"], thread=i["thread"]) for i in items], warn=warn,
                            durable=False)             # re-derivable from the source (stores/anatomy/log.py)
    for model in written.unknown_models:
        warn(f"{collector.path}: model {model} has no known context window, so its calls' utilisation "
               f"is left out (`trace anatomy replay --window TOKENS` sets one)")
    return written.added
