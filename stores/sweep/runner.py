"""`trace sweep` as a function: the nightly consolidation (paper 8.3,
Annex A.3) over the events logged since the last sweep.

    1. one sweep at a time (SWEEP.LOCK; ingest and recall go on meanwhile:
       the sweep never writes the log), finishing any interrupted commit;
    2. refuse to run on a damaged ledger or knowledge file (exit 5 naming
       the line; `--repair` rebuilds them);
    3. read the log from the watermark to its tail as it was when the sweep
       began, in chunks: extract fact candidates (rules; a model's for
       messages when --llm-cmd is given), reconcile each against the facts
       (ADD / UPDATE / SUPERSEDE / DELETE / NONE, each a ledger row), and
       feed the episode segmenter;
    4. reflect on the recalls logged since the last sweep (weak and empty
       queries, TUNE rows for tuning.json);
    5. commit ledger, knowledge, episodes, tuning and the new watermark as
       one (stores/sweep/files.py), unless --dry-run.
Rows carry their source event's time and content-derived ids, so a sweep
killed anywhere and run again leaves exactly the ledger one clean run does."""
from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import orjson

from reducers.episodes import Segmenter
from reducers.fact_reconcile import Reconciler
from reducers.fact_sources import NAME as EXTRACTOR, VERSION as EXTRACTOR_VERSION, FactExtractor
from stores.api.result import Result
from stores.sweep.files import (EPISODES, JOURNAL, KNOWLEDGE, LEDGER, LOCK, RUNS, SPOOL, STATE, TUNING, Commit,
                                append_line, jsonl, read_jsonl, recover)
from stores.sweep.knowledge_file import knowledge_lines, valid_knowledge
from stores.sweep.ledger_file import TAIL_ROWS, compact, valid_ledger
from stores.sweep.tuning import read_retrievals, read_tuning, reflect, tuning_bytes

CHUNK_EVENTS = 1000
STATE_VERSION = 1
_MESSAGE_KINDS = ("user", "assistant", "note")


@dataclass
class SweepReport(Result):
    dry_run: bool
    from_seq: int = 0
    to_seq: int = 0
    events: int = 0
    decisions: Counter = field(default_factory=Counter)
    facts_live: int = 0
    facts_total: int = 0
    episodes_closed: int = 0
    episodes_open: int = 0
    recalls_read: int = 0
    weak_queries: list = field(default_factory=list)
    tuned: int = 0
    llm: dict | None = None
    recovered: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"dry_run": self.dry_run, "from_seq": self.from_seq, "to_seq": self.to_seq, "events": self.events,
                "decisions": dict(sorted(self.decisions.items())), "facts_live": self.facts_live,
                "facts_total": self.facts_total, "episodes_closed": self.episodes_closed,
                "episodes_open": self.episodes_open,
                "reflection": {"recalls": self.recalls_read, "weak": [w.as_json() for w in self.weak_queries[:50]],
                               "weak_total": len(self.weak_queries), "tuned": self.tuned},
                "llm": self.llm, "recovered": self.recovered, "seconds": round(self.seconds, 3)}


def load_state(store: Path) -> dict:
    try:
        data = orjson.loads((store / STATE).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {"version": STATE_VERSION, "watermark": 0, "retrievals_offset": 0}
    return data if isinstance(data, dict) else {"version": STATE_VERSION, "watermark": 0, "retrievals_offset": 0}


def run_sweep(store, *, dry_run: bool = False, wait: float = 0.0, allow_delete: bool = False, model=None,
              on_decision: Callable[[dict], None] | None = None,
              on_progress: Callable[[int, int], None] | None = None) -> SweepReport:
    """One sweep; `model` is a stores.sweep.llm.ModelExtractor or None."""
    from stores.log.lock import WriterLock
    from stores.log.segments import tail_seq
    store.require()
    t0 = time.perf_counter()
    report = SweepReport(dry_run=dry_run)
    lock = WriterLock(store.dir, LOCK, "another sweep").acquire(wait)
    spool = None
    try:
        if not dry_run:
            report.recovered = recover(store.dir)
            if report.recovered:
                store.warn(report.recovered)
        elif (store.dir / JOURNAL).exists():
            store.warn("an interrupted sweep's commit is pending; a sweep without --dry-run finishes it")
        rows = valid_ledger(store.dir)
        knowledge = valid_knowledge(store.dir)
        state = load_state(store.dir)
        report.from_seq = int(state.get("watermark") or 0) + 1
        report.to_seq = tail = tail_seq(store.segments_dir)
        extractor = FactExtractor(state.get("extractor"))
        reconciler = Reconciler(knowledge, allow_delete=allow_delete, extractor=f"{EXTRACTOR}/{EXTRACTOR_VERSION}",
                                model=model.name if model else "llm")
        spool = _Spool(store.dir / SPOOL, scratch_in=store.dir if dry_run else None)
        segmenter = _segmenter(store, state, report.from_seq - 1, spool.add)
        compacted_at = len(rows)
        total = max(tail - report.from_seq + 1, 0)
        for chunk in _chunks(store.events(report.from_seq, tail) if total else iter(())):
            for row in _decide_chunk(chunk, extractor, reconciler, model):
                rows.append(row)
                report.decisions[row["action"]] += 1
                if on_decision:
                    on_decision(row)
            for event in chunk:
                segmenter.feed(event)
            report.events += len(chunk)
            if len(rows) > compacted_at + TAIL_ROWS:             # flat memory: the ledger stays bounded
                rows = compact(rows)
                compacted_at = len(rows)
            if on_progress:
                on_progress(report.events, total)
        tuning = read_tuning(store.dir)
        recalls, offset = read_retrievals(store.dir, int(state.get("retrievals_offset") or 0))
        weak, report.recalls_read, tune_rows = reflect(recalls, tuning, _doc_freq(store) if recalls else None)
        report.weak_queries = weak
        for row in tune_rows:
            rows.append(row)
            report.decisions[row["action"]] += 1
            report.tuned += 1
            if on_decision:
                on_decision(row)
        report.facts_total = len(knowledge.facts)
        report.facts_live = len(knowledge.live())
        report.episodes_closed = segmenter.closed_count
        report.episodes_open = len(segmenter.open)
        report.llm = model.report() if model else None
        if not dry_run and (report.events or tune_rows or offset != state.get("retrievals_offset")):
            new_state = {"version": STATE_VERSION, "watermark": tail, "retrievals_offset": offset,
                         "extractor": extractor.state(), "episodes": segmenter.state()}
            commit = Commit(store.dir)
            commit.stage(LEDGER, jsonl(compact(rows)))
            commit.stage(KNOWLEDGE, knowledge_lines(knowledge))
            commit.stage(EPISODES, jsonl(_episode_rows(store.dir, spool, segmenter)))
            commit.stage(TUNING, [tuning_bytes(tuning)])
            commit.stage(STATE, [orjson.dumps(new_state)])
            commit.commit()
        report.seconds = time.perf_counter() - t0
        if not dry_run:
            append_line(store.dir / RUNS, {"at": _now(), **report.as_json()})
        return report
    finally:
        if spool is not None:
            spool.close()
        lock.release()


class _Spool:
    """Episodes closed during a sweep wait on disk, not in memory, until
    the commit copies them into episodes.jsonl."""

    def __init__(self, path: Path, scratch_in: Path | None = None):
        if scratch_in is not None:     # a dry run leaves the sweep's files as they were: a scratch file in the
            import tempfile            # store's private tmp/ (never the system temp: it holds transcript text)
            from stores.paths import TMP, ensure_dir, tmp_prefix
            fd, name = tempfile.mkstemp(prefix=tmp_prefix("sweep"), suffix=".spool", dir=ensure_dir(scratch_in / TMP))
            os.close(fd)
            path = Path(name)
        self.path = path
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._f = open(path, "wb")

    def add(self, row: dict) -> None:
        self._f.write(orjson.dumps(row) + b"\n")

    def rows(self) -> Iterator[dict]:
        self._f.flush()
        with open(self.path, "rb") as f:
            for line in f:
                yield orjson.loads(line)

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()
        self.path.unlink(missing_ok=True)


def _chunks(events: Iterator[dict]) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    for e in events:
        chunk.append(e)
        if len(chunk) >= CHUNK_EVENTS:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _decide_chunk(chunk: list[dict], extractor: FactExtractor, reconciler: Reconciler, model) -> Iterator[dict]:
    """Candidates in seq order (a model's for the messages it answered),
    each reconciled as it comes."""
    from_model: dict[int, list] = {}
    if model is not None:
        messages = [e for e in chunk if e["kind"] in _MESSAGE_KINDS and not _aside(e)]
        for batch in model.batches(messages):
            facts = model.extract(batch)
            if facts is None:
                continue
            for e in batch:
                from_model[e["seq"]] = []
            for f in facts:
                from_model[f.source["seq"]].append(f)
    for event in chunk:
        found = from_model[event["seq"]] if event["seq"] in from_model else extractor.facts(event)
        for index, cand in enumerate(found):
            yield from reconciler.decide(cand, index)


def _aside(event: dict) -> bool:
    meta = event.get("meta") or {}
    return bool(meta.get("injected") or meta.get("thinking") or meta.get("inherited"))


def _segmenter(store, state: dict, watermark: int, on_close) -> Segmenter:
    """The segmenter resumed from the last sweep; when episodes.jsonl is
    gone (it is derived), first rebuilt from the log up to the watermark."""
    if watermark <= 0 or (store.dir / EPISODES).exists():
        return Segmenter(state.get("episodes"), on_close=on_close)
    store.warn(f"{EPISODES} is missing: rebuilding the episodes of events 1..{watermark} from the log")
    segmenter = Segmenter(on_close=on_close)
    for event in store.events(1, watermark):
        segmenter.feed(event)
    return segmenter


def _episode_rows(store: Path, spool: _Spool, segmenter: Segmenter) -> Iterator[dict]:
    """Closed episodes already on file, the newly closed, then the open ones."""
    yield from (row for row in read_jsonl(store / EPISODES) if row.get("closed"))
    yield from spool.rows()
    yield from segmenter.open_rows()


def _doc_freq(store):
    """How many events hold a word (0 without a full-text index: then
    nothing is tuned, as nothing can be checked)."""
    from stores.index.fulltext import FulltextIndex
    index = FulltextIndex(store.dir)
    if index.open() is None:
        index.close()
        return lambda term: 0
    return index.word_doc_freq


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
