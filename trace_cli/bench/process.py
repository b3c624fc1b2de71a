"""One child process, measured: wall time, CPU time and its own peak
resident set, from the rusage `wait4` returns for that child alone
(RUSAGE_CHILDREN would give the largest child ever waited for).

Linux carries a process's peak RSS across exec, so a child forked from
this (large) process would report at least our size. A small launcher
(a bare `python -S`, ~10 MB) forks the command instead and reports its
rusage, so the peak is the command's own (or its largest descendant's)."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass


def installed_env(served: bool = False) -> dict:
    """The environment of a process as an installed `trace` runs: with
    bytecode cached (PYTHONDONTWRITEBYTECODE, set in some sandboxes, would
    make every cold start compile its modules again), and in its own
    process even if the user runs `trace serve`, unless `served`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TRACE_SERVE")}
    if not served:
        env["TRACE_SERVE"] = "0"
    return env


def worker_cpu_ms(env: dict) -> float:
    """The CPU of the served worker of the last call made with `env` (from
    resident_server), as its client reported it; 0 when there is none."""
    path = env.get("TRACE_SERVE_REPORT")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        os.unlink(path)
    except (OSError, TypeError):
        return 0.0
    return sum(json.loads(line)["worker_cpu_ms"] for line in lines if line.strip())


@contextmanager
def resident_server(idle_s: float = 120):
    """A `trace serve` of the bench's own (its socket in a fresh runtime
    directory, so a user's server is neither used nor disturbed): yields
    the environment whose `trace` processes it serves."""
    runtime = tempfile.mkdtemp(prefix="trace-bench-", dir="/tmp")       # short: a socket path has ~100 bytes
    env = {**installed_env(served=True), "XDG_RUNTIME_DIR": runtime,
           "TRACE_SERVE_REPORT": os.path.join(runtime, "workers.jsonl")}
    trace = [sys.executable, "-m", "trace_cli", "serve"]
    started = subprocess.run([*trace, "--detach", "--idle", str(idle_s)], env=env, stdin=subprocess.DEVNULL,
                             capture_output=True)
    if started.returncode != 0:
        shutil.rmtree(runtime, ignore_errors=True)
        raise RuntimeError(f"trace serve did not start: {started.stderr.decode()[-300:]}")
    try:
        yield env
    finally:
        subprocess.run([*trace, "--stop"], env=env, stdin=subprocess.DEVNULL, capture_output=True)
        shutil.rmtree(runtime, ignore_errors=True)


@dataclass
class Measured:
    returncode: int
    wall_ms: float
    cpu_ms: float
    peak_rss_mb: float          # the child's, or its largest waited-for descendant's
    stdout: str


_LAUNCHER = """
import json, os, sys, time
argv, report = json.loads(sys.argv[1]), sys.argv[2]
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t
with open(report, "w") as f:
    json.dump({"code": os.waitstatus_to_exitcode(status), "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
               "maxrss_kb": ru.ru_maxrss}, f)
"""


def run_measured(argv: list[str], stdin: bytes | None = None, cwd: str | None = None,
                 env: dict | None = None, capture_stderr: bool = True) -> Measured:
    """Run argv to the end. stdout is kept (a temporary file, so a large
    output never blocks the child); stderr is kept out of the way unless
    `capture_stderr` is False, when it goes to ours (a section's progress)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as inp, \
            tempfile.NamedTemporaryFile(suffix=".json") as report:
        if stdin is not None:
            inp.write(stdin)
            inp.seek(0)
        launcher = subprocess.run(
            [sys.executable, "-S", "-c", _LAUNCHER, json.dumps(argv), report.name],
            stdin=inp if stdin is not None else subprocess.DEVNULL, stdout=out,
            stderr=subprocess.DEVNULL if capture_stderr else None, cwd=cwd, env=env)
        try:
            got = json.loads(open(report.name).read())
        except ValueError:
            raise RuntimeError(f"the bench launcher failed (exit {launcher.returncode}) running {argv[:3]}") from None
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    cpu_ms = got["cpu"] * 1000 + (worker_cpu_ms(env) if env else 0.0)      # a served command's worker's too
    return Measured(got["code"], got["wall"] * 1000, cpu_ms, got["maxrss_kb"] / 1024, text)

def repeated(argv: list[str], runs: int, ok: tuple[int, ...] = (0,), **kw) -> dict:
    """Median wall and CPU milliseconds of `runs` fresh processes, and the
    largest peak RSS among them; a run exiting outside `ok` is an error."""
    got = []
    for _ in range(runs):
        m = run_measured(argv, **kw)
        if m.returncode not in ok:
            raise RuntimeError(f"{' '.join(argv[:5])} exited {m.returncode}")
        got.append(m)
    return {"runs": runs, "wall_ms_median": round(statistics.median(m.wall_ms for m in got), 1),
            "cpu_ms_median": round(statistics.median(m.cpu_ms for m in got), 1),
            "peak_rss_mb": round(max(m.peak_rss_mb for m in got), 1)}
