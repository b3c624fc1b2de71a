"""`trace bench needle`: the paper's section 10.4 protocol on generated data.

50 needles (hashes, paths, addresses, codes, parameters, ports) evenly
spaced in 200 events (50 agent turns, ~80 flood tokens each), streamed in 5
parts with a compaction after each (budget 4,000, headroom 200, 3-turn hot
tail), for pointer compaction and the two baselines, each in its own store
through the same code path. Then:
- recall@10: pointer answers with `recall` over the lossless store; the
  baselines have only their context, so a needle counts if its value is
  there: a narrative keeps its summary, truncation (the paper's baseline)
  keeps the last max(cache, 10) events, the cache being the events pointer
  compaction must keep verbatim (the 3-turn hot tail);
- the context stays within budget after every cycle;
- eviction latency (the reducer's loop) at 200 events, and its scaling on
  in-memory caches of 100 … 100k events;
- the tokens a later turn re-reads for what was evicted: pointer markers
  vs narrative summaries, after each cycle (paper 7.3)."""
from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from trace_cli.bench.needles import build_session

BUDGET, HEADROOM, HOT_TAIL, PARTS = 4000, 200, 3, 5


def _protocol(root: Path, strategy: str, session, note) -> dict:
    from stores.context import compact
    from stores.context import push_pack
    from reducers.tokens import count_tokens
    from stores.recall import Recaller, RecallQuery
    from stores.store import Store
    store = Store(root / strategy)
    live = root / f"{strategy}.jsonl"
    per = len(session.messages) // PARTS
    cycles, within, latencies, reread, markers_left = 0, True, [], [], 0
    for part in range(PARTS):
        upto = len(session.messages) if part == PARTS - 1 else per * (part + 1)
        live.write_text("".join(json.dumps(m) + "\n" for m in session.messages[:upto]))
        list(store.ingest([str(live)], session="bench"))
        r = compact(store, "bench", budget=BUDGET, headroom=HEADROOM, hot_tail=HOT_TAIL, strategy=strategy,
                    reflect=False)
        cycles += 1 if r.evicted else 0
        if r.evicted:
            latencies.append(r.latency_ms)
        result = push_pack(store, "bench", budget=BUDGET, recall=False)
        pack = result.pack
        within = within and r.tokens_after <= BUDGET - HEADROOM and pack.tokens <= BUDGET
        logged = [m for m in result.markers if m.get("id")]
        reread.append(sum(count_tokens(m["text"]) for m in logged))
        markers_left = len(logged)
        events_left = r.cache_events
    context = "\n".join(m.content for m in pack.messages)
    if strategy == "truncate":
        context = _truncated_context(store)
    found = 0
    if strategy == "pointer":
        recaller = Recaller(store)
        recaller.prepare("hybrid")
        for n in session.needles:
            hits = recaller.recall(RecallQuery(query=n.query, k=10))
            found += any(n.value in h.text for h in hits) or n.value in context
    else:
        found = sum(n.value in context for n in session.needles)
    recall = found / len(session.needles)
    note(f"{strategy}: recall@10 {recall:.2f} after {cycles} cycle(s)")
    return {"bench": "needle", "strategy": strategy, "events": sum(1 for _ in store.events()),
            "needles": len(session.needles), "recall_at_10": round(recall, 3), "needle_loss": round(1 - recall, 3),
            "cycles": cycles, "events_in_cache": events_left, "markers_in_cache": markers_left,
            "within_budget_every_cycle": within,
            "eviction_ms_median": round(statistics.median(latencies), 3) if latencies else None,
            "reread_tokens_per_cycle": reread}


def _truncated_context(store) -> str:
    """The paper's truncation baseline: the session's last max(cache, 10)
    events and nothing else, the cache being the hot tail's events."""
    events = [e for e in store.events() if e["session_id"] == "bench" and e["kind"] != "marker"]
    turns: list = []
    for e in reversed(events):
        if e.get("turn_id") not in turns:
            if len(turns) == HOT_TAIL:
                break
            turns.append(e.get("turn_id"))
    hot = sum(1 for e in events if e.get("turn_id") in turns)
    return "\n".join(e["text"] for e in events[-max(hot, 10):])


def _scaling(sizes: list[int], note) -> list[dict]:
    """The eviction loop alone on in-memory caches (no disk, no index)."""
    from reducers.cache import Cache
    from reducers.evict import plan_compaction
    from reducers.tokens import count_tokens
    count_tokens("warm up the tokenizer")
    rows = []
    for n in sizes:
        turns = max(n // 4, 1)
        items = []
        for t in range(turns):
            base = {"session_id": "s", "turn_id": f"s/t{t}", "ts": "2026-05-01T10:00:00.000Z"}
            call = {"name": "shell", "call_id": f"c{t}"}
            for k, (kind, tok) in enumerate((("user", 12), ("tool_call", 10), ("tool_result", 80), ("assistant", 14))):
                seq = 4 * t + k + 1
                e = {**base, "id": f"e{seq}", "seq": seq, "kind": kind, "text": kind, "tokens": tok}
                if kind in ("tool_call", "tool_result"):
                    e["tool"] = dict(call)
                items.append(e)
        budget = sum(e["tokens"] for e in items) // 2       # every size evicts about half
        times = []
        for _ in range(5 if n <= 10_000 else 2):
            t0 = time.perf_counter()
            plan_compaction(Cache("s", items=items), budget=budget, headroom=HEADROOM, hot_turns=HOT_TAIL)
            times.append((time.perf_counter() - t0) * 1000)
        rows.append({"bench": "needle-scaling", "events": len(items), "budget": budget,
                     "eviction_ms_median": round(statistics.median(times), 3)})
        note(f"scaling: {len(items)} events → {rows[-1]['eviction_ms_median']} ms")
    base = rows[1]["eviction_ms_median"] if len(rows) > 1 else rows[0]["eviction_ms_median"]
    base_n = rows[1]["events"] if len(rows) > 1 else rows[0]["events"]
    for r in rows:
        r["ms_per_1k_events"] = round(r["eviction_ms_median"] / r["events"] * 1000, 3)
        r["vs_linear_from_200"] = round((r["eviction_ms_median"] / base) / (r["events"] / base_n), 2)
    return rows


def run_needle_bench(note: Callable[[str], None], workdir: str | None = None,
                     scaling: list[int] = (100, 200, 1_000, 10_000, 100_000)) -> list[dict]:
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-bench-needle-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        session = build_session(turns=50, needles=50, flood_words=80, seed=1004)
        rows = [_protocol(base, s, session, note) for s in ("pointer", "truncate", "narrative")]
        return rows + _scaling(list(scaling), note)
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)
