"""`trace compact` as a function: plan with the pure eviction reducer, then
append the markers through the chokepoint (they are events: the cache stays
a projection of the log), then check the evicted events can still be found.

With `auto`, compaction runs only when the session's working set has passed
WINDOW_CEILING of the model's `window` (the cron / hook trigger). A plan
that cannot reach the budget still appends what it evicted (nothing is
lost, and the cache is smaller) and says what stopped it (`stopped`).

The JSON result reports `latency_ms` for the eviction loop alone,
`index_catchup_ms` for bringing the indexes up to the log first (the span
must be persisted and indexed before it leaves the cache) and `topics_ms`
for the index lookups behind the markers' topic hints."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from reducers.cache import project
from reducers.drafts import Draft
from reducers.evict import PROTECTED_TOOLS, STRATEGIES, plan_compaction
from reducers.markers import topic_hints
from reducers.narrative import summarize
from reducers.terms import exact_terms, query_words
from reducers.tokens import encoding
from stores.api.result import Result
from stores.log.appender import Appender
from stores.context.bulk import BULK_FACTOR, bulk_cache
from stores.context.cache_file import WINDOW_CEILING, load_cache, read_saved, save_cache, working_set_tokens
from stores.context.sessions import require_session
from stores.errors import UsageError
from stores.index.fulltext import FulltextIndex

TOPIC_SAMPLE = 512
HEADROOM = 200                    # tokens left free under the budget by default
REFLECTION_SAMPLE = 5


@dataclass
class CompactResult(Result):
    session_id: str
    cycle: int
    evicted: int
    markers: int
    cache_events: int
    tokens_before: int
    tokens_after: int
    latency_ms: float                 # the eviction loop itself
    index_catchup_ms: float           # bringing the indexes up to the log first
    topics_ms: float = 0.0            # topic-hint lookups in the full-text index
    strategy: str = "pointer"
    fits: bool = True
    dry_run: bool = False
    new_markers: list[dict] = field(default_factory=list)
    reflection: dict | None = None
    stopped: str | None = None        # why it could not reach the budget
    auto: dict | None = None          # {window, working_set_tokens, triggered} with --auto

def compact(store, session_id: str, *, budget: int = 4000, headroom: int = HEADROOM, hot_tail: int = 3,
            strategy: str = "pointer", dry_run: bool = False, wait: float = 0.0,
            reflect: bool = True, protected: frozenset[str] = frozenset(PROTECTED_TOOLS),
            auto: bool = False, window: int | None = None) -> CompactResult:
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown --strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")
    if budget <= headroom:
        raise UsageError(f"--budget ({budget}) must be larger than --headroom ({headroom})")
    if auto and not window:
        raise UsageError("--auto compacts when the working set passes 75% of the model's window: give --window TOKENS")
    if window is not None and window < budget:
        raise UsageError(f"--window ({window}) is smaller than --budget ({budget}); give the window the model has")
    store.require()
    session_id = require_session(store, session_id)
    if auto:
        working = working_set_tokens(store, session_id)
        if working <= WINDOW_CEILING * window:
            return CompactResult(session_id, 0, 0, 0, 0, working, working, 0.0, 0.0, strategy=strategy,
                                 dry_run=dry_run, auto={"window": window, "working_set_tokens": working,
                                                        "triggered": False})
    t0 = time.perf_counter()
    status = store.index_status()
    # Keep the vector watermark moving when vectors are current (markers are not
    # embedded); never start a long vector catch-up from inside compaction.
    current = status["vector_seq"] >= status["log_seq"]
    with store.writer(wait=wait, embed=current) as w:     # opening a writer catches the full text up
        index_ms = (time.perf_counter() - t0) * 1000
        ft = FulltextIndex(store.dir)
        working = working_set_tokens(store, session_id)
        cache = None
        if (strategy == "pointer" and read_saved(store.dir, session_id) is None
                and working > BULK_FACTOR * (budget - headroom)):
            cache = bulk_cache(store, ft, session_id, budget, w.log.tail.seq, tuple(protected))
        cache = cache or load_cache(store, session_id, ft)
        n_docs = max(ft.num_docs(), 1)
        encoding()                                    # load the tokenizer before the clock starts
        topic_time = [0.0]

        def topics(evicted):                          # index lookups: timed apart from the loop
            t = time.perf_counter()
            step = max(len(evicted) // TOPIC_SAMPLE, 1)   # a span's topics show in a sample of it
            try:
                return topic_hints([e["text"] for e in evicted[::step]], ft.word_doc_freq, n_docs)
            finally:
                topic_time[0] += time.perf_counter() - t
        t1 = time.perf_counter()
        plan = plan_compaction(cache, budget=budget, headroom=headroom, hot_turns=hot_tail, strategy=strategy,
                               protected=protected, topics=topics, summarize=summarize)
        latency_ms = (time.perf_counter() - t1 - topic_time[0]) * 1000
        unread = _adopt_pending(plan, cache)
        result = CompactResult(session_id, plan.cycle, plan.evicted + unread, len(plan.markers),
                               sum(1 for e in plan.items if e["kind"] != "marker"),
                               max(plan.tokens_before, working), plan.tokens_after, round(latency_ms, 3),
                               round(index_ms, 3),
                               topics_ms=round(topic_time[0] * 1000, 3),
                               strategy=strategy, fits=plan.fits, dry_run=dry_run, stopped=plan.stopped,
                               new_markers=[{"text": m["text"], **m["meta"]["marker"]} for m in plan.markers])
        if auto:
            result.auto = {"window": window, "working_set_tokens": plan.tokens_before, "triggered": True}
        if dry_run or not plan.markers:
            if not dry_run and cache.items:
                save_cache(store, cache, w.log.tail.seq)     # a first load is worth keeping
            ft.close()
            return result
        sealed = _append_markers(w, plan.markers)
        cache.items = [e for e in cache.items if "seq" in e]          # the pending marker is logged now
        cache = project(session_id, sealed, cache)
        save_cache(store, cache, w.log.tail.seq)
        ft.close()
    if reflect and strategy == "pointer":
        result.reflection = reflection(store, plan.evicted_events)
    return result


def _adopt_pending(plan, cache) -> int:
    """A bulk cache's pending marker (stores/context/bulk.py) stands for
    events never read: it goes to the log whether or not the plan merged it
    into a new marker. Returns how many events it stands for."""
    pending = next((e for e in cache.items if e["kind"] == "marker" and "seq" not in e), None)
    if pending is None:
        return 0
    if any(m is pending for m in plan.items):                       # not merged: it is a marker of its own
        plan.markers.insert(0, pending)
        plan.cycle = max(plan.cycle, pending["meta"]["marker"]["cycle"])
    return int(pending["meta"]["marker"]["count"])


def _append_markers(w, markers: list[dict]) -> list[dict]:
    drafts = []
    for m in markers:
        info = m["meta"]["marker"]
        key = f"marker/{m['session_id']}/{info['cycle']}/{info['seq_from']}-{info['seq_to']}/{len(drafts)}"
        drafts.append(Draft(kind="marker", text=m["text"], session_id=m["session_id"], key=key,
                            ts=m.get("ts"), meta=m["meta"]))
    appender = Appender(w.log, w.state, w.artifacts, redact_secrets=False,
                        hooks=w.store.append_hooks(w))
    before = w.log.tail.seq
    appender.append_drafts(drafts, source_format="trace", source_path="trace compact")
    return [e for e in w.store.events(before + 1)]


def reflection(store, evicted: list[dict]) -> dict:
    """Paper 9.1: can a sample of the evicted events be found again by
    their own rarest terms? A miss means the marker points at something
    recall cannot reach."""
    from stores.recall import Recaller, RecallQuery
    if not evicted:
        return {"checked": 0, "found": 0, "missed": []}
    step = max(len(evicted) // REFLECTION_SAMPLE, 1)
    sample = evicted[::step][:REFLECTION_SAMPLE]
    recaller = Recaller(store)
    recaller._log = lambda *a, **k: None          # self-checks are not retrievals to learn from
    ft = recaller.fulltext
    found, missed = 0, []
    for e in sample:
        text = e.get("text") or ""
        words = [w for w in dict.fromkeys(query_words(text)) if not w.isdigit()]
        rare = sorted(words, key=lambda w: (ft.word_doc_freq(w) or 10**9, w))[:3]
        # and its rarest identifiers (branch_29, a path, a hash), as recall matches them whole
        ids = [t for t in dict.fromkeys(exact_terms(text[:20_000])) if not t.isdigit() and len(t) > 3]
        rare += sorted(ids, key=lambda t: (ft.doc_freq(t) or 10**9, t))[:2]
        if not rare:
            found += 1                           # nothing to search by, nothing to lose
            continue
        hits = recaller.recall(RecallQuery(query=" ".join(rare), k=10, mode="fulltext", session=e["session_id"]))
        if any(h.seq == e["seq"] for h in hits):
            found += 1
        else:
            missed.append(e["seq"])
    return {"checked": len(sample), "found": found, "missed": missed}
