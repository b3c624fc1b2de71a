"""The CLI as real processes: pipes, concurrent writers, a writer killed
mid-ingest. These are the failure modes in-process tests cannot reach."""
from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from stores.store import Store
from tests.conftest import REPO
from tests.helpers import openai_conversations


def _env(home) -> dict:
    env = {**os.environ, "TRACE_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("TRACE_DEBUG", None)
    return env


def _trace(*args, home, **kw):
    return subprocess.run([sys.executable, "-m", "trace_cli", *args], env=_env(home), cwd=REPO,
                          capture_output=True, **kw)


def test_piping_a_transcript_in_and_json_lines_out(tmp_path):
    home = tmp_path / "home"
    data = openai_conversations(tmp_path / "c.jsonl", 2).read_bytes()
    r = _trace("ingest", "-", "--session", "piped", home=home, input=data)
    assert r.returncode == 0, r.stderr
    (result,) = [orjson.loads(l) for l in r.stdout.splitlines()]
    assert result["added"] > 0 and result["session_id"] == "piped" and result["source"] == "-"


def test_export_into_head_closes_cleanly_on_epipe(tmp_path):
    home = tmp_path / "home"
    _trace("ingest", str(openai_conversations(tmp_path / "c.jsonl", 300)), home=home, check=True)
    shell = f"{sys.executable} -m trace_cli export | head -n 2"
    r = subprocess.run(["bash", "-o", "pipefail", "-c", shell], env=_env(home), cwd=REPO,
                       capture_output=True, text=True)
    assert len(r.stdout.splitlines()) == 2
    assert "Traceback" not in r.stderr and "Error" not in r.stderr
    assert r.returncode == 0


def test_a_locked_store_exits_4_unless_the_writer_waits(tmp_path):
    home = tmp_path / "home"
    src = str(openai_conversations(tmp_path / "c.jsonl", 1))
    from stores.log.lock import WriterLock
    home.mkdir()
    lock = WriterLock(home).acquire()
    try:
        r = _trace("ingest", src, home=home)
        assert r.returncode == 4 and b"locked" in r.stderr and b"--wait" in r.stderr
        r = _trace("ingest", "--wait", "0.2", src, home=home)          # waited, and still locked: wait longer
        assert r.returncode == 4 and b"(waited 0.2 s); retry with a longer --wait SECONDS" in r.stderr
        waiter = subprocess.Popen([sys.executable, "-m", "trace_cli", "ingest", "--wait", "30", src],
                                  env=_env(home), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.0)
    finally:
        lock.release()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err


def test_four_processes_appending_at_once_lose_and_double_nothing(tmp_path):
    home = tmp_path / "home"
    sources = [str(openai_conversations(tmp_path / f"c{i}.jsonl", 40, tool_every=2, prefix=f"p{i}"))
               for i in range(4)]
    procs = [subprocess.Popen([sys.executable, "-m", "trace_cli", "ingest", "--no-state", "--wait", "120", src],
                              env=_env(home), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for src in sources]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        results.append(orjson.loads(out))
    store = Store(home)
    events = list(store.events())
    # each source: 40 conversations of a system prompt and 3 turns, 2 with a call and its result
    per_source = 40 * (1 + 3 * 2 + 2 * 2)
    assert [r["added"] for r in results] == [per_source] * 4
    assert len(events) == 4 * per_source
    keys = collections.Counter(e["source"]["key"] for e in events)
    assert all(n == 1 for n in keys.values())
    assert [e["seq"] for e in events] == list(range(1, 4 * per_source + 1))
    assert store.verify().ok


@pytest.mark.parametrize("index_process_after", ["never", "0"])     # indexing in process, or in a child
def test_a_writer_killed_mid_ingest_loses_and_doubles_nothing_on_reingest(tmp_path, index_process_after):
    home = tmp_path / "home"
    src = openai_conversations(tmp_path / "big.jsonl", 4000, turns=4, tool_every=2)
    env = {**_env(home), "TRACE_INDEX_PROCESS_AFTER": index_process_after}
    proc = subprocess.Popen([sys.executable, "-m", "trace_cli", "ingest", "--no-state", str(src)],
                            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    seg_dir = home / "segments"
    while time.time() < deadline:                 # kill once some batches are on disk
        if seg_dir.is_dir() and sum(f.stat().st_size for f in seg_dir.iterdir()) > 200_000:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = sum(1 for _ in Store(home).events())
    # (--wait: a child indexer holds the lock until it sees its parent gone)
    r = _trace("ingest", "--no-state", "--wait", "30", str(src), home=home)
    assert r.returncode == 0, r.stderr
    events = list(Store(home).events())
    keys = collections.Counter(e["source"]["key"] for e in events)
    assert all(n == 1 for n in keys.values()), "an event was written twice"
    expected = sum(1 + 4 * 2 + 2 * 2 for _ in range(4000))   # system + (user, assistant) x4 + 2 tool pairs
    assert len(events) == expected and 0 < partial < expected
    assert Store(home).verify().ok
    found = _trace("recall", "config_3999_3.yaml", "--mode", "fulltext", "--json", home=home)
    assert found.returncode == 0 and b"config_3999_3.yaml" in found.stdout


@pytest.mark.parametrize("command", ["stats", "recall deploy"])      # recall: its quick path, without Typer
def test_a_closed_stdout_is_one_line_not_a_traceback(tmp_path, command):
    run = subprocess.run(f"{sys.executable} -m trace_cli {command} >&-", shell=True, env=_env(tmp_path / "home"),
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr == "trace: error: standard output is closed; redirect it (to /dev/null to discard it)\n"


@pytest.mark.parametrize("command, code, said", [
    ("note add -c context -", 2, "empty note"),
    ("ingest -", 3, "no JSON records found"),
    ("recall --queries -", 3, "no query in stdin"),
    ("anatomy record - --session s", 1, "the input is empty"),
])
def test_a_closed_stdin_reads_as_empty_input_not_a_crash(tmp_path, command, code, said):
    run = subprocess.run(f"{sys.executable} -m trace_cli {command} <&-", shell=True, env=_env(tmp_path / "home"),
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == code and said in run.stderr, run.stderr
    assert "Error:" not in run.stderr and "Traceback" not in run.stderr
