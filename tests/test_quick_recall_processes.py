"""The recall parity of tests/test_quick_recall_parity.py, in real
processes: the same command line through the quick path and, with
TRACE_QUICK_RECALL=0, through the full CLI, its stdout a pipe (JSON Lines)
or a terminal (a Rich table), its stderr closed or unread, its reader
leaving early. A probe records which path ran (whether Typer was loaded)."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.recall_world import LONG, REPO, argv as _argv, world  # noqa: F401 (a fixture)


PROBE = ("import os, sys\nfrom trace_cli.entry import main\ncode = main()\n"
         "open(os.environ['PARITY_PROBE'], 'w').write(str('typer' in sys.modules))\nsys.exit(code)\n")


def _process_env(world: dict, tmp_path: Path, quick: bool) -> dict:
    env = dict(os.environ, TRACE_HOME=world["@store"], TRACE_SERVE="0", COLUMNS="150", LINES="50",
               TERM="xterm-256color", PYTHONIOENCODING="utf-8", PARITY_PROBE=str(tmp_path / f"probe-{quick}"))
    env.pop("NO_COLOR", None)
    if not quick:
        env["TRACE_QUICK_RECALL"] = "0"
    return env


def _process(args: list[str], env: dict, tty: bool) -> tuple[int, bytes, bytes, bool]:
    """(exit code, stdout, stderr, whether Typer was loaded) of `trace ARGS`
    in a new process, its stdout a pipe or a pseudo-terminal."""
    cmd = [sys.executable, "-c", PROBE, *args]
    if not tty:
        done = subprocess.run(cmd, capture_output=True, env=env, cwd=REPO, stdin=subprocess.DEVNULL, timeout=120)
        out, err, code = done.stdout, done.stderr, done.returncode
    else:
        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=REPO)
        os.close(slave)
        chunks = []
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:                  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(master)
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
        out = b"".join(chunks)
    return code, out, err, Path(env["PARITY_PROBE"]).read_text() == "True"


PROCESS_CASES = [
    (["recall", "payments timeout", "-k", "3"], False),
    (["recall", "payments timeout", "--block", "--budget", "300"], False),
    (["recall", "--queries", "@bad", "-k", "1"], False),
    (["recall", "the of and"], False),
    (["--store", "@nostore", "recall", "deploy"], False),
    (["recall", LONG, "-k", "2", "--mode", "fulltext"], False),
    (["recall", "payments timeout", "-k", "3"], True),
    (["recall", "payments timeout", "-k", "3", "--json"], True),
    (["recall", "zebra quux", "--mode", "fulltext"], True),
]


@pytest.mark.parametrize("template,tty", PROCESS_CASES,
                         ids=[f"{'tty' if t else 'pipe'}: {' '.join(a)[:50]}" for a, t in PROCESS_CASES])
def test_a_real_process_prints_the_same_bytes_on_both_paths(world, tmp_path, template, tty):
    args = _argv(template, world)
    code, out, err, typer_loaded = _process(args, _process_env(world, tmp_path, quick=True), tty)
    full = _process(args, _process_env(world, tmp_path, quick=False), tty)
    assert not typer_loaded and full[3], "the first run must take the quick path, the second the full CLI"
    assert (code, out, err) == full[:3]
    if code == 0 and (not tty or "--json" in args) and "--block" not in args:     # JSON Lines, one hit a line
        assert out and all("score" in json.loads(line) for line in out.splitlines())
    if tty and "--json" not in args and code == 0:
        assert b"\xe2\x94" in out and b"score" in out         # a Rich table (box drawing), not JSON


def test_the_quick_path_can_be_ruled_out(world, tmp_path):
    env = _process_env(world, tmp_path, quick=False)
    assert _process(["recall", "payments timeout", "-k", "1"], env, tty=False)[3] is True


@pytest.mark.parametrize("stderr", ["closed", "reader gone"])
@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_with_no_one_reading_stderr_the_hits_and_the_exit_code_still_come(world, tmp_path, stderr, quick):
    """`2>&-`, or a stderr pipe whose reader left: a note that cannot be
    written does not stop the command (it once exited 1, or 0 with stdout
    silenced and the hits lost)."""
    env = _process_env(world, tmp_path, quick)
    results = []
    for args in (["recall", LONG, "-k", "2", "--mode", "fulltext"], ["recall", "the of and"]):
        read, write = os.pipe()
        os.close(read)
        closing = (lambda: os.close(2)) if stderr == "closed" else None
        done = subprocess.run([sys.executable, "-c", PROBE, *args], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              stderr=write, preexec_fn=closing, env=env, cwd=REPO, timeout=120)
        os.close(write)
        results.append((done.returncode, len(done.stdout.splitlines())))
    assert results == [(0, 2), (3, 0)]
    assert (Path(env["PARITY_PROBE"]).read_text() == "True") is not quick


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_a_reader_that_leaves_early_is_no_error_on_either_path(world, tmp_path, quick):
    """`trace recall … | head -1`: more hits than a pipe holds, the reader
    gone after the first line; exit 0 and nothing on stderr."""
    env = _process_env(world, tmp_path, quick)
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)        # one page: the ~45 kB of hits cannot all fit
    proc = subprocess.Popen([sys.executable, "-c", PROBE, "recall", "payments timeout", "-k", "1000", "--mmr", "0.9"],
                            stdout=write, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=REPO)
    os.close(write)
    with open(read, "rb") as out:
        first = out.readline()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0 and err == b"" and json.loads(first)["rank"] == 1
    assert (Path(env["PARITY_PROBE"]).read_text() == "True") is not quick
