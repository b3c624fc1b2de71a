"""Defect 7 (disk full): the error injected at the write call of each
layer, and a real 2 MB filesystem where one may be mounted. The run ends
with one clear line and exit 1, the result counts exactly what reached
the log, nothing half-written is served, and the next run (space freed)
adds the rest once."""
from __future__ import annotations

import collections
import errno
import os
import subprocess
import sys

import pytest

from stores.store import Store
from tests.conftest import REPO
from tests.helpers import cli, openai_conversations, transcript_events

ENOSPC = OSError(errno.ENOSPC, "No space left on device")


def _fail_after(n: int):
    """The log's write call, failing like a disk that fills up mid-batch:
    after `n` whole writes, half of the next one reaches the file, then ENOSPC."""
    calls = [0]

    def write(self, parts, size):
        calls[0] += 1
        if calls[0] > n:
            data = b"".join(parts)
            os.write(self._fd, data[: len(data) // 2])
            raise ENOSPC
        return real(self, parts, size)
    from stores.log.event_log import EventLog
    real = EventLog._write
    return write


def _assert_whole(home, src, expected: int):
    events = transcript_events(home)
    keys = collections.Counter(e["source"]["key"] for e in events)
    assert all(n == 1 for n in keys.values()) and len(events) == expected
    assert Store(home).verify().ok


def test_a_full_disk_at_the_log_write_reports_what_got_in_and_loses_nothing(tmp_path, trace_home, monkeypatch):
    src = openai_conversations(tmp_path / "big.jsonl", 700, turns=2)       # 3,500 events: two batches and more
    from stores.log.event_log import EventLog
    with monkeypatch.context() as m:
        m.setattr(EventLog, "_write", _fail_after(1))
        run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1
    assert "No space left on device" in run.err and "Traceback" not in run.err and "please report" not in run.err
    (result,) = run.lines()
    in_log = len(transcript_events(trace_home))
    assert result["added"] == in_log > 0 and result["errors"] == 1
    report = Store(trace_home).verify()
    assert report.ok and not any("torn" in n for n in report.notes)    # the failed batch left no half line
    again = cli("ingest", "--no-embed", str(src))
    assert again.code == 0 and again.lines()[0]["added"] == 3500 - in_log
    _assert_whole(trace_home, src, 3500)


def test_a_full_disk_at_the_artifact_write_is_one_clear_line(tmp_path, trace_home, monkeypatch):
    from stores.log.artifacts import ArtifactStore
    src = tmp_path / "big-output.jsonl"
    import json
    src.write_text(json.dumps({"messages": [
        {"role": "user", "content": "build"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "line of build output\n" * 20000}]}) + "\n")

    def full(self, chunks):
        raise ENOSPC
    with monkeypatch.context() as m:
        m.setattr(ArtifactStore, "put_chunks", full)
        run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1 and "No space left on device" in run.err and "please report" not in run.err
    assert run.lines()[0]["added"] == len(transcript_events(trace_home))
    assert cli("ingest", "--no-embed", str(src)).code == 0
    _assert_whole(trace_home, src, 3)


def test_a_full_disk_when_the_index_is_saved_keeps_the_log_and_catches_up(tmp_path, trace_home, monkeypatch):
    from stores.index.fulltext import FulltextIndex
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1, prefix="a"))).code == 0
    src = openai_conversations(tmp_path / "c.jsonl", 20)

    def full(self, seq):
        raise ValueError("An IO error occurred: 'No space left on device (os error 28)'")
    with monkeypatch.context() as m:
        m.setattr(FulltextIndex, "commit", full)
        run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1 and "the indexes could not be saved" in run.err and "please report" not in run.err
    assert run.lines()[0]["added"] == 20 * 7
    found = cli("recall", "config_19_2.yaml", "--mode", "fulltext")
    assert found.code == 0 and any("config_19_2.yaml" in h["text"] for h in found.lines())
    assert cli("verify").code == 0


def test_a_full_disk_when_the_fsync_fails_is_one_clear_line(tmp_path, trace_home, monkeypatch):
    import stores.log.event_log
    src = openai_conversations(tmp_path / "c.jsonl", 700, turns=2)
    real_fsync = os.fsync
    calls = [0]

    def fsync(fd):
        calls[0] += 1
        if calls[0] == 3:
            raise OSError(errno.EIO, "Input/output error")
        return real_fsync(fd)
    with monkeypatch.context() as m:
        m.setattr(stores.log.event_log.os, "fsync", fsync)
        run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1 and "Input/output error" in run.err and "please report" not in run.err
    assert cli("ingest", "--no-embed", str(src)).code == 0
    _assert_whole(trace_home, src, 3500)


@pytest.fixture
def tiny_fs(tmp_path):
    """A 1 MB tmpfs (where mounting is allowed: root in a container that permits it)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({r.stderr.decode().strip() or r.returncode})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_real_1_mb_filesystem_fills_up_cleanly_and_the_rest_goes_in_once_it_grows(tmp_path, tiny_fs):
    src = openai_conversations(tmp_path / "big.jsonl", 600, turns=3, tool_every=1)
    env = {**os.environ, "TRACE_HOME": str(tiny_fs / "store"), "PYTHONPATH": str(REPO)}
    env.pop("TRACE_DEBUG", None)

    def trace(*args):
        return subprocess.run([sys.executable, "-m", "trace_cli", *args], env=env, cwd=REPO, capture_output=True,
                              text=True, timeout=300)
    full = trace("ingest", "--no-embed", str(src))
    assert full.returncode == 1, full.stderr
    assert "No space left on device" in full.stderr and "Traceback" not in full.stderr
    assert "please report" not in full.stderr
    import json
    result = json.loads(full.stdout.splitlines()[-1])
    in_log = len(transcript_events(tiny_fs / "store"))
    assert result["added"] == in_log
    subprocess.run(["mount", "-o", "remount,size=200m", str(tiny_fs)], check=True)
    again = trace("ingest", "--no-embed", str(src))
    assert again.returncode == 0, again.stderr
    expected = 600 * (1 + 3 * 2 + 3 * 2)
    _assert_whole(tiny_fs / "store", src, expected)
