"""One measured phase per process, so peak memory is the phase's own:
    python -m trace_cli.bench.worker ingest|ingest+embed STORE DIR...
    python -m trace_cli.bench.worker sweep|scan STORE
    python -m trace_cli.bench.worker append STORE TEMPLATE N
    python -m trace_cli.bench.worker sqlite|sqlite+fts5 DB TEMPLATE N
Prints one JSON object: {phase, events, seconds, rss_mb, anon_mb}. Memory
counts this process and its children (a long ingest indexes in a child):
rss_mb is the sum of the peak resident sets (they include pages of
memory-mapped files, such as Tantivy's segments while a merge reads them:
page cache the kernel can drop), anon_mb the peak of anonymous memory,
sampled every 0.1 s (what the processes allocated; Linux only)."""
from __future__ import annotations

import itertools
import os
import resource
import sqlite3
import sys
import threading
import time
from pathlib import Path

import orjson

BATCH = 2000
_SEALED_FIELDS = ("seq", "id", "hash", "prev", "ingested_at")


def _template(path: str) -> list[dict]:
    events = []
    with open(path, "rb") as f:
        for line in f:
            e = orjson.loads(line)
            for k in _SEALED_FIELDS:
                e.pop(k, None)
            e.pop("artifact_content", None)
            events.append(e)
    return events


def _stream(template: list[dict], n: int):
    """n events cycling the template, each cycle in its own sessions."""
    for i, e in enumerate(itertools.islice(itertools.cycle(template), n)):
        copy = i // len(template)
        yield {**e, "session_id": f"{e['session_id']}-b{copy}"}


def phase_append(store: str, template: str, n: int) -> dict:
    from stores.log.event_log import EventLog
    log = EventLog(Path(store))
    spent, batch = 0.0, []
    for e in _stream(_template(template), n):
        batch.append(e)
        if len(batch) == BATCH:
            t = time.perf_counter()
            log.append(batch)
            spent += time.perf_counter() - t
            batch = []
    t = time.perf_counter()
    log.append(batch)
    log.close()
    spent += time.perf_counter() - t
    return {"events": n, "seconds": spent}


def phase_sqlite(db: str, template: str, n: int, fts: bool = False) -> dict:
    """Rows into a plain table, one transaction per 1,000; with `fts` the
    text is also indexed by an FTS5 table over the same rows (external
    content, so the text is stored once): the peer that, like TRACE's
    ingest, leaves the events searchable."""
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, session_id TEXT, kind TEXT, ts TEXT, "
                "text TEXT, body TEXT)")
    if fts:
        con.execute("CREATE VIRTUAL TABLE events_fts USING fts5(text, content='events', content_rowid='seq')")
    spent, rows, seq = 0.0, [], 0
    for e in _stream(_template(template), n):
        seq += 1
        rows.append(e)
        if len(rows) == 1000:
            spent += _insert(con, rows, seq, fts)
            rows = []
    spent += _insert(con, rows, seq, fts)
    con.close()
    return {"events": n, "seconds": spent}


def _insert(con, rows, last_seq, fts: bool) -> float:
    t = time.perf_counter()
    first = last_seq - len(rows) + 1
    con.execute("BEGIN")
    con.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)",
                    ((first + i, e["session_id"], e["kind"], e.get("ts"), e["text"], orjson.dumps(e))
                     for i, e in enumerate(rows)))
    if fts:
        con.executemany("INSERT INTO events_fts(rowid, text) VALUES (?, ?)",
                        ((first + i, e["text"]) for i, e in enumerate(rows)))
    con.execute("COMMIT")
    return time.perf_counter() - t


def phase_ingest(store: str, dirs: list[str], embed: bool) -> dict:
    from stores.store import Store
    t = time.perf_counter()
    added = errors = 0
    for r in Store(store).ingest(dirs, embed=embed):
        added += r.added
        errors += r.errors
    seconds = time.perf_counter() - t
    from trace_cli.bench.footprint import footprint
    return {"events": added, "errors": errors, "seconds": seconds, "store_bytes": footprint(store)}


def phase_sweep(store: str) -> dict:
    from stores.store import Store
    from stores.sweep import run_sweep
    report = run_sweep(Store(store))
    return {"events": report.events, "seconds": report.seconds, "decisions": dict(report.decisions),
            "facts_live": report.facts_live, "episodes": report.episodes_closed + report.episodes_open}


def phase_scan(store: str) -> dict:
    """The floor any sweep pays: read and parse every event of the log."""
    from stores.store import Store
    t = time.perf_counter()
    n = sum(1 for _ in Store(store).events())
    return {"events": n, "seconds": time.perf_counter() - t}


class AnonPeak:
    """The peak of RssAnon, sampled in a background thread."""

    def __init__(self, every: float = 0.1):
        self.peak_kb: int | None = None
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self._every):
                return

    def _sample(self) -> None:
        # This process and its children (the full-text indexer of a long ingest), together.
        kbs = [_status_kb("RssAnon", pid) for pid in ["self", *_child_pids()]]
        if kbs[0] is not None:
            self.peak_kb = max(self.peak_kb or 0, sum(kb or 0 for kb in kbs))

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join()
        self._sample()
        return None if self.peak_kb is None else self.peak_kb / 1024


def _child_pids() -> list[str]:
    pids = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                pids += f.read().split()
    except OSError:
        pass
    return pids


def _status_kb(field: str, pid: str = "self") -> int | None:
    """A kB figure from /proc/<pid>/status (None where Linux has none)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _peak_rss_kb() -> int:
    """This process's peak resident set. VmHWM where Linux has it: after
    fork + exec, ru_maxrss still counts the parent's image."""
    hwm = _status_kb("VmHWM")
    own = hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return own + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss    # + the largest child's peak


def main(argv: list[str]) -> None:
    from trace_cli.app import tune_gc
    tune_gc()                              # as the `trace` command does
    anon = AnonPeak()
    phase, *args = argv
    if phase in ("ingest", "ingest+embed"):
        out = phase_ingest(args[0], args[1:], embed=phase == "ingest+embed")
    elif phase == "sweep":
        out = phase_sweep(args[0])
    elif phase == "scan":
        out = phase_scan(args[0])
    elif phase == "append":
        out = phase_append(args[0], args[1], int(args[2]))
    elif phase in ("sqlite", "sqlite+fts5"):
        out = phase_sqlite(args[0], args[1], int(args[2]), fts=phase == "sqlite+fts5")
    else:
        raise SystemExit(f"unknown phase {phase}")
    out["phase"] = phase
    out["rss_mb"] = _peak_rss_kb() / 1024
    out["anon_mb"] = anon.stop()
    sys.stdout.write(orjson.dumps(out).decode() + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
