"""`trace bench context`: what `trace context` costs against the session's
length, compacted and not, and against the rest of the store.

Generated agent sessions (trace_cli/bench/needles.py: user, tool call,
tool result, reply per turn) of each size go into one store. For each
session, in this order:
- uncompacted: the median and p95 of `push_pack` in process (budget 8000,
  recall on; wall and CPU); `trace context` processes as a runtime starts
  them before each model call: the first cold call, then the median of 3
  more (wall and CPU; they use the token counts the first one kept), and
  the median of 3 served by a `trace serve` the bench starts for itself
  (wall, and CPU: the client's plus its worker's in the server); and the
  peer: reading the whole session through the same index, which is what a
  render that replays the session pays (`vs_full_read` is the ratio);
- the compaction itself (budget 8000, one cold `compact` call, timed);
- compacted: the same measurements again.
`growth` is the median's ratio to the smallest session's, against
`size_ratio`: linear or better means growth <= size_ratio.

Then the smallest session above 5k events is also ingested into a store of
its own: `vs_alone` is its median in the big store over its median alone,
~1 when the cost does not follow the store. The machine's load moves the
medians; the ratios, measured in the same run, are what to compare."""
from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from trace_cli.bench.needles import build_session
from trace_cli.bench.process import installed_env, resident_server, run_measured

BUDGET = 8000
LINE_MESSAGES = 400
COLD_CALLS = 3            # cold calls after the first, per measurement (median)


def _write_session(path: Path, events: int, seed: int) -> None:
    s = build_session(turns=max(events // 4, 1), needles=max(events // 2000, 2), flood_words=60, seed=seed)
    with open(path, "w") as f:
        for i in range(0, len(s.messages), LINE_MESSAGES):
            f.write(json.dumps({"messages": s.messages[i:i + LINE_MESSAGES]}) + "\n")


def _ingest(store_dir: Path, src: Path, session: str, note) -> None:
    from stores.store import Store
    t = time.perf_counter()
    added = sum(r.added for r in Store(store_dir).ingest([str(src)], session=session, embed=False))
    note(f"ingested {added} events into {session} in {time.perf_counter() - t:.1f} s")


def _medians(fn: Callable[[], object], repeat: int) -> tuple[float, float, float, object]:
    """Median and p95 wall milliseconds, median CPU milliseconds (what a
    loaded machine does not inflate), and the last result."""
    times, cpu, last = [], [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        last = fn()
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    times.sort()
    return statistics.median(times), times[min(int(len(times) * 0.95), len(times) - 1)], statistics.median(cpu), last


def _cold(store_dir: Path, *args: str, env: dict | None = None) -> tuple[float, float]:
    """Wall and CPU milliseconds of one fresh `trace` process (a served
    one's CPU adds its worker's, which the server's client reports)."""
    m = run_measured([sys.executable, "-m", "trace_cli", "--store", str(store_dir), *args], env=env or installed_env())
    if m.returncode not in (0, 1):
        raise RuntimeError(f"trace {' '.join(args[:3])} exited {m.returncode}")
    return m.wall_ms, m.cpu_ms


def _cold_calls(store_dir: Path, session: str, env: dict | None = None) -> tuple[float, float, float]:
    """A runtime's calls before successive model calls: the first cold
    call's wall ms, then the median wall and CPU ms of the next ones."""
    args = ("context", "--session", session, "--budget", str(BUDGET))
    first, _ = _cold(store_dir, *args, env=env)
    later = [_cold(store_dir, *args, env=env) for _ in range(COLD_CALLS)]
    return first, statistics.median(w for w, _ in later), statistics.median(c for _, c in later)


def _full_read(store, session: str) -> float:
    from stores.context.reading import SessionReader
    from stores.index.fulltext import FulltextIndex
    ft = FulltextIndex(store.dir)
    t = time.perf_counter()
    reader = SessionReader(store, ft, session)
    n = sum(len(reader.read(page)) for page in reader.forwards(0))
    ms = (time.perf_counter() - t) * 1000
    ft.close()
    return ms if n else 0.0


def _measure(store, session: str, state: str, size: int, repeat: int, served: dict | None = None) -> dict:
    from stores.context import push_pack
    median, p95, cpu, result = _medians(lambda: push_pack(store, session, budget=BUDGET), repeat)
    first, cold, cold_cpu = _cold_calls(store.dir, session)
    row = {"bench": "context", "events": size, "state": state, "median_ms": round(median, 2),
           "p95_ms": round(p95, 2), "cpu_ms": round(cpu, 2), "cold_first_ms": round(first, 1),
           "cold_cli_ms": round(cold, 1), "cold_cli_cpu_ms": round(cold_cpu, 1)}
    if served is not None:
        _, served_ms, served_cpu = _cold_calls(store.dir, session, env=served)
        row.update(served_cli_ms=round(served_ms, 1), served_cli_cpu_ms=round(served_cpu, 1))
    return {**row, "pack_tokens": result.pack.tokens, "read_events": result.read_events}


def run_context_bench(sizes: list[int], note: Callable[[str], None], workdir: str | None = None,
                      repeat: int = 7) -> list[dict]:
    from stores.context import compact
    from stores.store import Store
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-bench-context-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        store = Store(base / "store")
        rows: list[dict] = []
        for i, size in enumerate(sizes):
            src = base / f"s{size}.jsonl"
            _write_session(src, size, seed=100 + i)
            _ingest(store.dir, src, f"s{size}", note)
        with resident_server() as served:
            for size in sizes:
                sid = f"s{size}"
                peer = _full_read(store, sid)
                row = _measure(store, sid, "uncompacted", size, repeat, served)
                row.update(full_read_ms=round(peer, 1), vs_full_read=round(row["median_ms"] / peer, 3) if peer else None)
                rows.append(row)
                t = time.perf_counter()
                done = compact(store, sid, budget=BUDGET, reflect=False)
                rows.append({"bench": "compact", "events": size, "ms": round((time.perf_counter() - t) * 1000, 1),
                             "evicted": done.evicted, "fits": done.fits})
                row = _measure(store, sid, "compacted", size, repeat, served)
                row.update(full_read_ms=round(peer, 1), vs_full_read=round(row["median_ms"] / peer, 3) if peer else None)
                rows.append(row)
                note(f"{size} events: {rows[-3]['median_ms']} ms uncompacted, {row['median_ms']} ms compacted "
                     f"(full read {peer:.0f} ms); cold calls {row['cold_cli_ms']} ms, served {row['served_cli_ms']} ms")
        _growth(rows, sizes)
        alone = [s for s in sizes if s >= 5000]
        if alone and len(sizes) > 1:
            size = alone[0]
            solo = Store(base / "alone")
            _ingest(solo.dir, base / f"s{size}.jsonl", f"s{size}", note)
            row = _measure(solo, f"s{size}", "uncompacted, alone in its store", size, repeat)
            big = next(r for r in rows if r["bench"] == "context" and r["events"] == size and r["state"] == "uncompacted")
            row["vs_alone"] = round(big["median_ms"] / row["median_ms"], 2)
            row["cpu_vs_alone"] = round(big["cpu_ms"] / row["cpu_ms"], 2) if row["cpu_ms"] else None
            row["store_events"] = sum(sizes)
            rows.append(row)
        return rows
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)


def _growth(rows: list[dict], sizes: list[int]) -> None:
    for state in ("uncompacted", "compacted"):
        mine = [r for r in rows if r["bench"] == "context" and r["state"] == state]
        if not mine:
            continue
        first = mine[0]
        for r in mine:
            r["size_ratio"] = round(r["events"] / first["events"], 1)
            r["growth"] = round(r["median_ms"] / first["median_ms"], 2) if first["median_ms"] else None
            r["cpu_growth"] = round(r["cpu_ms"] / first["cpu_ms"], 2) if first["cpu_ms"] else None
