"""The retrieval log (`retrievals.jsonl`): one line per recall query, its
filters and the hits it returned, which the nightly sweep reads. The query
is redacted before it is cut; a record is one write, so appends from
several processes never interleave mid-line."""
from __future__ import annotations

import errno
import os
from datetime import datetime, timezone
from pathlib import Path

import orjson

from reducers.redact import MAX_SECRET, redact
from stores.recall.query import Hit, RecallQuery, printed


def append_retrieval(store_dir: Path, q: RecallQuery, hits: list[Hit], seconds: float, note) -> None:
    """Append the query's record; a failure is a `note`, never an error (a
    recall answers whether or not it could log itself)."""
    row = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
           "query": redact(q.query[:2000 + MAX_SECRET])[0][:2000],       # redacted before the cut
           "query_id": q.query_id, "mode": q.mode, "hops": q.hops, "k": q.k,
           "filters": {"session": q.session, "kinds": q.kinds, "since": q.since, "until": q.until,
                       "min_score": q.min_score},
           "results": [{"seq": h.seq, "event_id": h.event_id, "score": printed(h.score), "hop": h.hop}
                       for h in hits],
           "latency_ms": round(seconds * 1000, 3)}
    if q.rerank:
        row["rerank"] = True
    line = orjson.dumps(row)
    if redact(line.decode())[1]:           # a filter may quote a secret too (the query is redacted above)
        from reducers.redact_fields import redact_value
        line = orjson.dumps(redact_value(row)[0])
    line += b"\n"
    try:
        fd = os.open(store_dir / "retrievals.jsonl",
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)   # never through a link
        try:
            os.write(fd, line)            # one write per record: appends never interleave mid-line
        finally:
            os.close(fd)
    except OSError as exc:
        why = "it is a symbolic link, never followed" if exc.errno == errno.ELOOP else exc
        refused = exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
        fix = (f"; the hits are as good, but `trace sweep` learns nothing from this query: give yourself write "
               f"access to the store (`chmod -R u+w {store_dir}`)") if refused else ""
        note(f"could not append to the retrieval log: {why}{fix}")
