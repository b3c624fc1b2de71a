"""`trace serve`: a `trace` started while the resident server runs is the
same command, run in a warm fork of the server: the same output, exit
code and stderr, its own stdin and working directory, signals that reach
it. Without a server (none, a dead one, an outdated one) the command runs
in its own process, and nobody notices but the clock."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

DEMO = SAMPLES / "claude-code" / "demo-session.jsonl"


def _trace(*args: str, env: dict, stdin: bytes = b"", cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trace_cli", *args], input=stdin, capture_output=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.fixture
def runtime():
    path = tempfile.mkdtemp(prefix="trs-", dir="/tmp")          # short: a socket path holds ~100 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(runtime, trace_home):
    e = {**os.environ, "XDG_RUNTIME_DIR": runtime, "TRACE_HOME": str(trace_home)}
    e.pop("TRACE_SERVE", None)
    return e


@pytest.fixture
def served(env):
    started = _trace("serve", "--detach", "--idle", "120", env=env)
    assert started.returncode == 0, started.stderr.decode()
    yield env
    _trace("serve", "--stop", env=env)


def _status(env) -> dict | None:
    run = _trace("serve", "--status", "--json", env=env)
    return json.loads(run.stdout) if run.returncode == 0 else None


def _alone(env) -> dict:
    return {**env, "TRACE_SERVE": "0"}


def test_a_served_command_prints_and_exits_as_it_does_alone(served):
    assert _trace("ingest", str(DEMO.relative_to(REPO)), env=served).returncode == 0     # relative: the cwd travels
    before = _status(served)["commands"]
    for args in (("recall", "sqlite", "--json"), ("sessions", "--json"), ("stats", "--json")):
        here, there = _trace(*args, env=_alone(served)), _trace(*args, env=served)
        assert (there.returncode, there.stdout) == (here.returncode, here.stdout), args
    missing = ("recall", "zebra quartz fjord", "--min-score", "0.99")
    assert _trace(*missing, env=served).returncode == _trace(*missing, env=_alone(served)).returncode == 3
    wrong = ("recall", "--no-such-flag")
    here, there = _trace(*wrong, env=_alone(served)), _trace(*wrong, env=served)
    assert there.returncode == here.returncode == 2 and there.stderr == here.stderr
    assert _status(served)["commands"] == before + 5


def test_stdin_and_the_working_directory_reach_the_served_command(served, tmp_path):
    messages = [{"role": "user", "content": "the quokka migration runs on port 7311"},
                {"role": "assistant", "content": "noted: quokka on 7311"}]
    got = _trace("--store", "rel-store", "ingest", "-", "--session", "piped", env=served, cwd=tmp_path,
                 stdin=json.dumps(messages).encode())
    assert got.returncode == 0, got.stderr.decode()
    assert (tmp_path / "rel-store").is_dir()
    hits = _trace("--store", "rel-store", "recall", "quokka port", "--json", env=served, cwd=tmp_path)
    assert "7311" in hits.stdout.decode()


def test_a_signal_to_the_client_reaches_the_command(served, tmp_path):
    """`ingest --follow` stops cleanly on SIGTERM (exit 0, "stopped; every
    event read is on disk"): served, the signal sent to the client does the same."""
    server, follow = _served_follow(served, tmp_path)
    time.sleep(1)
    follow.send_signal(signal.SIGTERM)
    assert follow.wait(timeout=60) == 0
    assert b"stopped; every event read is on disk" in follow.stderr.read()
    deadline = time.time() + 30
    while _children(server) and time.time() < deadline:
        time.sleep(0.1)
    assert not _children(server)


def _served_follow(served, folder) -> tuple[int, subprocess.Popen]:
    """A served `trace ingest FOLDER --follow` (it runs until stopped),
    once its worker runs in the server: (the server's pid, the client)."""
    server = _status(served)["pid"]
    follow = subprocess.Popen([sys.executable, "-m", "trace_cli", "ingest", str(folder), "--follow"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=served, cwd=REPO)
    deadline = time.time() + 60
    while not _children(server) and time.time() < deadline:
        time.sleep(0.1)
    assert _children(server), "the follow did not start in the server"
    return server, follow


def _socket_path(runtime: str) -> str:
    """Where a server with this XDG_RUNTIME_DIR listens."""
    from trace_cli.resident import address
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = runtime
    try:
        return address.socket_path()
    finally:
        if old is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = old


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_without_a_live_server_the_command_runs_in_its_own_process(env, runtime):
    assert _status(env) is None and _trace("serve", "--stop", env=env).returncode == 3
    path = _socket_path(runtime)
    os.makedirs(os.path.dirname(path), mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(path)                                   # a socket file nobody listens on: a crashed server's
    dead.close()
    ran = _trace("ingest", str(DEMO), env=env)
    assert ran.returncode == 0 and b"demo" in ran.stdout + ran.stderr
    started = _trace("serve", "--detach", "--idle", "60", env=env)  # and a new server replaces the dead socket
    assert started.returncode == 0, started.stderr.decode()
    assert _trace("serve", "--stop", env=env).returncode == 0


def test_an_idle_server_quits_and_removes_its_socket(env, runtime):
    assert _trace("serve", "--detach", "--idle", "1", env=env).returncode == 0
    deadline = time.time() + 30
    while os.listdir(os.path.join(runtime, "trace")) and time.time() < deadline:
        time.sleep(0.2)
    assert os.listdir(os.path.join(runtime, "trace")) == []
    assert _status(env) is None


def test_a_second_server_is_refused_while_one_listens_and_detach_is_idempotent(served):
    first = _status(served)
    again = _trace("serve", "--detach", "--json", env=served)
    assert again.returncode == 0
    assert json.loads(again.stdout)["pid"] == first["pid"] and json.loads(again.stdout)["started_now"] is False
    foreground = _trace("serve", "--idle", "5", env=served)
    assert foreground.returncode == 1 and b"already listening" in foreground.stderr


def test_changed_code_is_seen(tmp_path, monkeypatch):
    from trace_cli.resident.server import code_fingerprint
    probe = tmp_path / "probe.py"
    probe.write_text("x = 1\n")
    fake = type(sys)("stores._fingerprint_probe")
    fake.__file__ = str(probe)
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    before = code_fingerprint()
    assert str(probe) in before
    probe.write_text("x = 22\n")
    assert code_fingerprint() != before


def test_a_terminal_on_stdin_or_trace_serve_0_keeps_the_command_here(monkeypatch):
    from trace_cli.resident.client import wanted
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    assert wanted(["recall", "x"]) and wanted(["--store", "s", "context", "--session", "a"])
    assert not wanted(["serve", "--status"]) and not wanted(["--store", "s", "serve"]) and not wanted([])
    monkeypatch.setenv("TRACE_SERVE", "0")
    assert not wanted(["recall", "x"])
    monkeypatch.delenv("TRACE_SERVE")
    monkeypatch.setattr(os, "isatty", lambda fd: fd == 0)
    assert not wanted(["recall", "x"])


def test_a_worker_killed_mid_command_is_an_error_line_not_a_silent_exit(served, tmp_path):
    server, follow = _served_follow(served, tmp_path)
    for child in _children(server):
        os.kill(child, signal.SIGKILL)
    assert follow.wait(timeout=60) == 1
    assert b"worker ended without finishing the command" in follow.stderr.read()


def test_a_client_killed_outright_stops_its_worker_as_sigterm_would(served, tmp_path):
    """SIGKILL cannot be forwarded: the worker sees its client's connection
    close instead, and stops as the command stops on SIGTERM (a follow
    after a last pass), rather than running on with no one to stop it."""
    server, follow = _served_follow(served, tmp_path)
    follow.kill()
    follow.wait(timeout=60)
    deadline = time.time() + 30
    while _children(server) and time.time() < deadline:
        time.sleep(0.05)
    left = _children(server)
    for child in left:                                 # not left running past a failed test
        os.kill(child, signal.SIGKILL)
    assert not left


def test_a_client_that_connects_and_says_nothing_does_not_hold_up_the_others(served, runtime):
    with socket.socket(socket.AF_UNIX) as silent:
        silent.connect(_socket_path(runtime))            # stopped, or slow: its request may never come
        status = _status(served)
        silent.setblocking(False)
        with pytest.raises(BlockingIOError):             # still waited for: the other was not queued behind it
            silent.recv(1)
    assert status is not None and status["commands"] == 0


@pytest.mark.parametrize("start", [b"\x00\x00", b"\x00\x00\x00\x40" + b"\xfb" * 8], ids=["half-length", "half-body"])
def test_a_client_that_stops_half_way_through_its_request_does_not_hold_up_the_others(served, runtime, start):
    with socket.socket(socket.AF_UNIX) as stalled:
        stalled.connect(_socket_path(runtime))
        stalled.sendall(start)                          # and then nothing: the rest may never come
        status = _status(served)
        stalled.setblocking(False)
        with pytest.raises(BlockingIOError):             # still waited for, not read to its timeout first
            stalled.recv(1)
    assert status is not None and status["commands"] == 0
    assert _trace("ingest", str(DEMO), env=served).returncode == 0
    assert _status(served)["commands"] == 1


def test_a_client_that_sends_garbage_is_dropped_and_the_server_keeps_serving(served, runtime):
    path = _socket_path(runtime)
    for garbage in (b"\xff\xff\xff\xff" + b"x" * 16, b"\x00\x00\x00\x05not m", b"\x00\x00"):
        with socket.socket(socket.AF_UNIX) as bad:
            bad.settimeout(20)
            bad.connect(path)
            bad.sendall(garbage)
            bad.shutdown(socket.SHUT_WR)
            assert bad.recv(64) == b""                  # no reply, connection closed
    assert _status(served)["commands"] == 0
    assert _trace("ingest", str(DEMO), env=served).returncode == 0
    assert _status(served)["commands"] == 1


def test_serve_takes_one_of_detach_status_and_stop(env):
    both = _trace("serve", "--detach", "--stop", env=env)
    assert both.returncode == 2 and b"one of --detach, --status, --stop" in both.stderr
