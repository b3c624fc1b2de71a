"""The crash harness: SIGKILL a writer at seeded random moments, check
what a crash may leave after every kill, and finish with a clean run.

    python -m tests.reliability.crash_harness --op ingest --kills 50 --seed 1 --work DIR

prints one JSON report: kills delivered, runs that finished before their
kill, and every violation found. The tests run it as a subprocess (a clean
process: the operations run in forked children, so each kill costs no
interpreter start-up, and the harness itself starts no thread before it
forks).

After every kill, a crash may leave the log shorter than the run meant,
the derived files behind or (in the instant between an index commit and
its checksum record) due for a rebuild; it must never leave:
  * a log that fails verification (a torn last line is passed over, not
    a failure);
  * an event twice, or one that no source holds;
  * a gap in the seqs;
  * a temp file outside the store's tmp/.
After the final, unkilled run: every event exactly once, verify clean
(derived files too), recall finds the last source's needle, tmp/ empty.

Operations: ingest (a new source each round, all sources ingested by the
final run), compact (successive compactions of the sessions), index
(`trace index` after an --no-embed ingest, and `trace reindex`), sweep
(new facts each round; after the clean run the facts must equal those of
one unkilled sweep of the same log, and the sweep's files are never left
half-written)."""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path


_TAGS: dict[Path, str] = {}


def _openai_source(path: Path, tag: str, conversations: int) -> Path:
    _TAGS[path] = tag
    with open(path, "w") as f:
        for c in range(conversations):
            msgs = [{"role": "system", "content": f"You are assistant {tag}."}]
            for t in range(3):
                call = f"call_{tag}_{c}_{t}"
                msgs += [{"role": "user", "content": f"{tag} question {c}.{t}: where is needle_{tag}_{c}_{t}.yaml?"},
                         {"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function",
                          "function": {"name": "find", "arguments": json.dumps({"q": f"needle_{tag}_{c}_{t}"})}}]},
                         {"role": "tool", "tool_call_id": call, "content": f"/srv/{tag}/{c}/{t}/needle.yaml " * 20},
                         {"role": "assistant", "content": f"It is /srv/{tag}/{c}/{t}/needle.yaml."}]
            f.write(json.dumps({"messages": msgs}) + "\n")
    return path


def _facts_source(path: Path, tag: str, statements: int, round_no: int) -> Path:
    """A conversation stating facts about a fixed set of keys, with values
    that change from round to round (so later sweeps update earlier facts)."""
    _TAGS[path] = tag
    msgs = []
    for i in range(statements):
        k = i % 40
        msgs += [{"role": "user", "content": f"We decided to use PostgreSQL {round_no + 10} for service s{k}. "
                                             f"Set TIMEOUT_S{k}={round_no * 10 + k} in config/s{k}.env."},
                 {"role": "assistant", "content": f"Done: needle_{tag}_0_1.yaml records service s{k}."}]
    path.write_text(json.dumps({"messages": msgs}) + "\n")
    return path


def _knowledge(store_dir: Path) -> dict:
    """The sweep's live facts: key -> (value, status)."""
    out = {}
    path = store_dir / "knowledge.jsonl"
    if path.is_file():
        for line in path.read_bytes().splitlines():
            row = json.loads(line)
            out[row["key"]] = (row.get("value"), row.get("status"))
    return out


def _run_child(argv: list[str], log: Path) -> int:
    """Fork; the child runs `trace ARGV` in process (stdout/stderr to `log`)."""
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            from trace_cli.app import main
            code = main(argv)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            code = 99
        os._exit(code)
    return pid


def _killed(pid: int, delay: float) -> tuple[bool, float]:
    """Kill the child after `delay` seconds: (whether it was still running,
    how long it ran)."""
    start = time.monotonic()
    deadline = start + delay
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False, time.monotonic() - start
        time.sleep(min(0.005, max(deadline - time.monotonic(), 0)))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return True, delay


def _finish(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _check(store_dir: Path, expected_keys: set[str] | None, final: bool, needle: str | None,
           system_tmp: Path) -> list[str]:
    """Invariants, checked in a forked child (the engines start threads)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            found = _invariants(store_dir, expected_keys, final, needle, system_tmp)
        except BaseException as exc:
            found = [f"the check itself failed: {type(exc).__name__}: {exc}"]
        os.write(w, json.dumps(found).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data or b'["the checker died"]')


def _invariants(store_dir: Path, expected_keys, final: bool, needle, system_tmp: Path) -> list[str]:
    from stores.store import Store
    store = Store(store_dir)
    out = []
    report = store.verify()
    if report.problems:
        out += [f"verify: {p}" for p in report.problems[:5]]
    if final and not report.ok:
        out += [f"verify after a clean run: {p}" for p in report.derived[:5]]
    events = list(store.events())
    seqs = [e["seq"] for e in events]
    if seqs != list(range(1, len(seqs) + 1)):
        out.append("seqs are not 1..n without gaps")
    derived = ("working-state",)        # snapshots TRACE adds per ingest run: their number follows the runs
    keys = Counter(e["source"]["key"] for e in events
                   if e.get("kind") != "marker" and e["source"].get("format") not in derived)
    doubled = [k for k, n in keys.items() if n > 1]
    if doubled:
        out.append(f"{len(doubled)} event(s) written twice, e.g. {doubled[0]}")
    markers = Counter(e["source"]["key"] for e in events if e.get("kind") == "marker")
    if any(n > 1 for n in markers.values()):
        out.append("a marker written twice")
    if expected_keys is not None:
        stray = set(keys) - expected_keys
        if stray:
            out.append(f"{len(stray)} event(s) no source holds, e.g. {sorted(stray)[0]}")
        if final and set(keys) != expected_keys:
            out.append(f"{len(expected_keys - set(keys))} event(s) missing after the clean run")
    for name in ("knowledge.jsonl", "ledger.jsonl"):          # the sweep installs its files whole or not at all
        path = store_dir / name
        for n, line in enumerate(path.read_bytes().splitlines() if path.is_file() else (), 1):
            try:
                json.loads(line)
            except ValueError:
                out.append(f"{name}:{n} is not a whole JSON line")
                break
    leftovers = [p.name for p in system_tmp.iterdir() if p.name != "data-gym-cache"]
    if leftovers:
        out.append(f"temp files outside the store: {leftovers[:3]}")
    if final:
        tmp = store_dir / "tmp"
        if tmp.is_dir() and any(tmp.iterdir()):
            out.append("tmp/ not empty after a clean run")
        if needle:
            from stores.recall import Recaller, RecallQuery
            recaller = Recaller(store)
            recaller.prepare("fulltext")
            hits = recaller.recall(RecallQuery(query=needle, k=5, mode="fulltext"))
            if not any(needle in h.text for h in hits):
                out.append(f"recall did not find {needle}")
    return out


def _expected_keys(work: Path, sources: list[Path]) -> set[str]:
    """Every source key the sources hold, from a clean ingest elsewhere."""
    from stores.store import Store
    ref = work / "reference"
    pid = _run_child(["--store", str(ref), "ingest", "--no-embed", *map(str, sources)], work / "reference.log")
    assert _finish(pid) == 0, (work / "reference.log").read_text()
    return {e["source"]["key"] for e in Store(ref).events() if e["source"].get("format") != "working-state"}


def run(op: str, kills: int, seed: int, work: Path, conversations: int = 120) -> dict:
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    store = work / "store"
    system_tmp = work / "system-tmp"
    system_tmp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(system_tmp)
    import tempfile
    tempfile.tempdir = str(system_tmp)
    log = work / "runs.log"
    report = {"op": op, "seed": seed, "kills": 0, "finished_before_kill": 0, "rounds": 0, "violations": []}

    def violations(found: list[str], when: str) -> None:
        report["violations"] += [f"{when}: {v}" for v in found]

    sources: list[Path] = []
    if op == "ingest":
        def argv(i):
            sources.append(_openai_source(work / f"src{i}.jsonl", f"r{i}", conversations))
            return ["--store", str(store), "ingest", "--wait", "30", *map(str, sources)]
        final_argv = lambda: ["--store", str(store), "ingest", "--wait", "30", *map(str, sources)]  # noqa: E731
    else:
        base = [_openai_source(work / f"base{i}.jsonl", f"b{i}", conversations) for i in range(3)]
        sources.extend(base)
        for i, src in enumerate(base):         # compact: three long sessions, one per source
            session = ["--session", f"long-{i}"] if op == "compact" else []
            pid = _run_child(["--store", str(store), "ingest", "--no-embed", *session, str(src)], log)
            assert _finish(pid) == 0, log.read_text()[-2000:]
        if op == "compact":
            from stores.store import Store
            sessions = [s["session_id"] for s in Store(store).stats().by_session]

            def argv(i, budget=None):
                session = sessions[i % len(sessions)]
                more = _openai_source(work / f"more{i}.jsonl", f"m{i}", max(conversations // 6, 4))
                sources.append(more)                  # new turns each round: there is always something to evict
                pid = _run_child(["--store", str(store), "ingest", "--wait", "30", "--no-embed", "--session",
                                  session, str(more)], log)
                if _finish(pid) != 0:
                    violations(["setup ingest failed"], f"round {i}")
                return ["--store", str(store), "compact", "--wait", "30", "--session", session,
                        "--budget", str(budget or rng.choice([400, 800, 1500])), "--hot-tail", "2"]
            # (markers pile up over many rounds: the clean run gets a budget that holds them)
            final_argv = lambda: argv(kills * 6 + 1, budget=100_000)  # noqa: E731
        elif op == "sweep":
            def argv(i):
                more = _facts_source(work / f"facts{i}.jsonl", f"f{i}", max(conversations * 10, 40), i)
                sources.append(more)                  # new facts each round, some updating the last round's
                pid = _run_child(["--store", str(store), "ingest", "--wait", "30", "--no-embed", str(more)], log)
                if _finish(pid) != 0:
                    violations(["setup ingest failed"], f"round {i}")
                return ["--store", str(store), "sweep", "--wait", "30"]
            final_argv = lambda: ["--store", str(store), "sweep", "--wait", "30"]  # noqa: E731
        elif op == "index":
            def argv(i):
                if i % 3 == 2:
                    return ["--store", str(store), "reindex", "--wait", "30"]
                more = _openai_source(work / f"more{i}.jsonl", f"m{i}", max(conversations // 6, 4))
                sources.append(more)
                pid = _run_child(["--store", str(store), "ingest", "--wait", "30", "--no-embed", str(more)], log)
                code = _finish(pid)
                if code != 0:
                    violations([f"setup ingest exited {code}"], f"round {i}")
                return ["--store", str(store), "index", "--wait", "30"]
            final_argv = lambda: ["--store", str(store), "index", "--wait", "30"]  # noqa: E731
        else:
            raise SystemExit(f"unknown --op {op}")
    # how long an unkilled run takes, to aim the kills inside it
    first = argv(0)
    t = time.monotonic()
    code = _finish(_run_child(first, log))
    span = max(time.monotonic() - t, 0.05)
    if code not in (0, 1):
        violations([f"the first run exited {code}"], "calibration")
    i = 1
    while report["kills"] < kills and i < kills * 6:
        args = argv(i)
        killed, ran = _killed(_run_child(args, log), rng.uniform(0.0, span))
        if killed:
            report["kills"] += 1
        else:
            report["finished_before_kill"] += 1
            span = max(min(span, ran), 0.02)        # aim inside the runs as they are now
        violations(_check(store, None, False, None, system_tmp), f"after round {i}")
        i += 1
    report["rounds"] = i
    code = _finish(_run_child(final_argv(), log))
    if code != 0:
        violations([f"the clean run exited {code}: {log.read_text()[-600:]}"], "final")
    expected = _expected_keys(work, sources) if op != "compact" else None
    needle = f"needle_{_TAGS[sources[-1]]}_0_1.yaml"
    violations(_check(store, expected, True, needle, system_tmp), "final")
    if op == "sweep":                          # the same facts as one sweep of the same log, never killed
        pid = _run_child(["--store", str(work / "reference"), "sweep"], work / "reference.log")
        if _finish(pid) != 0:
            violations(["the reference sweep failed"], "final")
        elif _knowledge(store) != _knowledge(work / "reference"):
            violations(["the facts differ from one unkilled sweep of the same log"], "final")
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", required=True, choices=["ingest", "compact", "index", "sweep"])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--conversations", type=int, default=120)
    ap.add_argument("--work", type=Path, required=True)
    args = ap.parse_args()
    print(json.dumps(run(args.op, args.kills, args.seed, args.work, args.conversations)))


if __name__ == "__main__":
    main()
