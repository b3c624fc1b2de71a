"""`trace bench hooks`: how long the installed Stop hook keeps an agent
waiting. A store of --events events is built from Claude Code sessions,
the one the hook follows holding `session_events` of them (the rest in
other sessions of 500); then --runs times one more turn is appended to its
transcript and the hook command runs as the agent runs it (a new process,
payload on stdin), timed by wall clock. Ingest re-reads the whole
transcript and skips what it has, so the session's length, not the
store's, sets the cost: each size is one row. The peer, timed the same way in the same run,
is the floor every hook pays: starting the interpreter and importing the
CLI (`trace --help`)."""
from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from trace_cli.bench.process import installed_env

SESSION = "b3c0ffee-0000-4000-8000-00000000bench"
OTHER_SESSION_EVENTS = 500


def _turn(n: int, parent: str | None, session: str = SESSION) -> tuple[list[dict], str]:
    """One turn: a question, an answer, a tool call and its result (4 events)."""
    ts = f"2026-05-{1 + n // 86400 % 28:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    base = {"isSidechain": False, "userType": "external", "cwd": "/srv/bench", "sessionId": session,
            "version": "2.0.30", "timestamp": ts}
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/{n}/{k}")) for k in range(4)]
    call = f"toolu_bench_{n:06d}"
    lines = [
        {**base, "parentUuid": parent, "type": "user", "uuid": ids[0],
         "message": {"role": "user", "content": f"Step {n}: check service-{n % 97} port {8000 + n % 1000} "
                                                f"and the config at /etc/svc/{n % 97}.yaml"}},
        {**base, "parentUuid": ids[0], "type": "assistant", "uuid": ids[1], "requestId": f"req_{n}",
         "message": {"id": f"msg_bench_{n:06d}a", "type": "message", "role": "assistant", "model": "bench",
                     "content": [{"type": "text", "text": f"Looking at service-{n % 97} (step {n})."}]}},
        {**base, "parentUuid": ids[1], "type": "assistant", "uuid": ids[2], "requestId": f"req_{n}",
         "message": {"id": f"msg_bench_{n:06d}b", "type": "message", "role": "assistant", "model": "bench",
                     "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                  "input": {"command": f"grep -n port /etc/svc/{n % 97}.yaml"}}]}},
        {**base, "parentUuid": ids[2], "type": "user", "uuid": ids[3],
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                  "content": f"12: port: {8000 + n % 1000}\n13: host: svc-{n % 97}"}]}},
    ]
    return lines, ids[3]


def _write_turns(path: Path, start: int, count: int, parent: str | None, session: str = SESSION) -> str | None:
    with open(path, "a") as f:
        for n in range(start, start + count):
            lines, parent = _turn(n, parent, session)
            f.writelines(json.dumps(line) + "\n" for line in lines)
    return parent


def _timed(argv: list[str], stdin: bytes | None = None, cpu: list[float] | None = None) -> float:
    """Wall seconds of one run; its CPU seconds (user + system, which a
    busy machine inflates far less than wall time) appended to `cpu`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=installed_env())
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return elapsed


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def run_hooks_bench(events: int, session_sizes: list[int], runs: int, workdir: str | None, note) -> list[dict]:
    return [_one_size(events, min(size, events), runs, workdir, note) for size in session_sizes]


def _one_size(events: int, session_events: int, runs: int, workdir: str | None, note) -> dict:
    trace = str(Path(sys.executable).with_name("trace"))
    with tempfile.TemporaryDirectory(prefix="trace-bench-hooks-", dir=workdir) as tmp:
        root = Path(tmp)
        store, transcript = root / "store", root / "session.jsonl"
        turns = max(1, session_events // 4)
        parent = _write_turns(transcript, 0, turns, None)
        others, left, k = root / "others", events - turns * 4, 0
        others.mkdir()
        while left >= 4:
            size = min(OTHER_SESSION_EVENTS, left) // 4
            _write_turns(others / f"s{k}.jsonl", 0, size, None, session=f"b3c0ffee-0000-4000-8000-{k:012d}")
            left, k = left - size * 4, k + 1
        note(f"store of {events - left} events: the hooked session holds {turns * 4}, {k} other sessions the rest")
        subprocess.run([trace, "--store", str(store), "ingest", "--no-embed", str(transcript), str(others)],
                       check=True, capture_output=True)
        payload = json.dumps({"session_id": SESSION, "transcript_path": str(transcript), "cwd": "/srv/bench",
                              "hook_event_name": "Stop", "stop_hook_active": False}).encode()
        hook = [trace, "--store", str(store), "hooks", "run", "--agent", "claude-code", "Stop"]
        floor = [trace, "--help"]
        hook_s, floor_s, hook_cpu, floor_cpu = [], [], [], []
        note(f"{runs} runs: append a turn, fire the Stop hook (and the peer: `trace --help`)")
        for i in range(runs):
            parent = _write_turns(transcript, turns + i, 1, parent)
            hook_s.append(_timed(hook, payload, hook_cpu))
            floor_s.append(_timed(floor, cpu=floor_cpu))
        from stores.store import Store
        total = sum(1 for e in Store(store).events() if e["kind"] != "task_state")   # ingest's own snapshots
        failures = (store / "hooks.log").read_text() if (store / "hooks.log").exists() else ""
    row = {"bench": "hooks", "store_events": events - left, "session_events": turns * 4, "runs": runs,
           "events_after": total, "events_expected": events - left + runs * 4,
           "hook_failures_logged": failures.count("\n"),
           "hook_p50_ms": round(statistics.median(hook_s) * 1000, 1),
           "hook_p95_ms": round(_pct(hook_s, 0.95) * 1000, 1), "hook_max_ms": round(max(hook_s) * 1000, 1),
           "peer_cli_start_p50_ms": round(statistics.median(floor_s) * 1000, 1),
           "peer_cli_start_p95_ms": round(_pct(floor_s, 0.95) * 1000, 1),
           "hook_cpu_p50_ms": round(statistics.median(hook_cpu) * 1000, 1),
           "hook_cpu_p95_ms": round(_pct(hook_cpu, 0.95) * 1000, 1),
           "peer_cli_start_cpu_p50_ms": round(statistics.median(floor_cpu) * 1000, 1)}
    row["hook_p95_vs_peer_p95"] = round(row["hook_p95_ms"] / row["peer_cli_start_p95_ms"], 2)
    return row
