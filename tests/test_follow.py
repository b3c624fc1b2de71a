"""`trace ingest --follow`: a transcript written line by line by another
process ends in the store as exactly the events a one-shot ingest makes;
truncation and rotation of the source lose nothing; SIGTERM stops it
cleanly with everything on disk."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from stores.follow.tailer import Follower
from stores.store import Store
from tests.helpers import cli, transcript_events

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_sessions"
TRACE = ROOT / ".venv" / "bin" / "trace"

_WRITER = """
import sys, time
src, dst, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(src, "rb") as f:
    lines = f.read().splitlines(keepends=True)
with open(dst, "ab", buffering=0) as out:
    for n, line in enumerate(lines):
        half = len(line) // 2
        out.write(line[:half])          # a line is written in two pieces: the reader must wait for its end
        time.sleep(pause / 2)
        out.write(line[half:])
        time.sleep(pause / 2)
        if n in (len(lines) // 3, 2 * len(lines) // 3):
            time.sleep(2)               # still for a while: the follower ingests what is there, however busy
"""


def _essence(events) -> list[tuple]:
    """What an event says, without what the log assigns (id, seq, times, hashes)."""
    return [(e["session_id"], e["kind"], e["text"], orjson.dumps(e.get("tool"), option=orjson.OPT_SORT_KEYS),
             (e.get("source") or {}).get("key")) for e in events]


def _one_shot(tmp_path: Path, transcript: Path) -> list[tuple]:
    store_dir = tmp_path / "one-shot"
    assert cli("--store", str(store_dir), "ingest", "--no-embed", str(transcript)).code == 0
    return _essence(transcript_events(store_dir))


@pytest.mark.parametrize("sample", ["claude-code/demo-session.jsonl", "codex/rollout-demo.jsonl"])
def test_follow_of_a_file_written_line_by_line_by_another_process_ends_with_the_one_shot_events(tmp_path, sample):
    source = SAMPLES / sample
    growing = tmp_path / "live" / source.name
    growing.parent.mkdir()
    growing.touch()
    store_dir = tmp_path / "followed"
    follower = subprocess.Popen([str(TRACE), "--store", str(store_dir), "ingest", "--follow", "--no-embed",
                                 "--poll", "0.05", "--settle", "0.05", str(growing)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # 0.25 s a line, the follower settling after 0.05 s: it ingests as the lines come, not once at the end
        writer = subprocess.run([sys.executable, "-c", _WRITER, str(source), str(growing), "0.25"], timeout=120)
        assert writer.returncode == 0
        _wait_for(lambda: _count(store_dir) >= len(_one_shot(tmp_path, source)), 60,
                  alive=lambda: follower.poll() is None)
    finally:
        follower.send_signal(signal.SIGTERM)
        out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    assert b"stopped; every event read is on disk" in err
    reported = [orjson.loads(l) for l in out.splitlines()]
    assert sum(r["added"] for r in reported) == len(transcript_events(store_dir))
    assert len(reported) >= 2                      # passes added events while the file was still growing
    assert _essence(transcript_events(store_dir)) == _one_shot(tmp_path, source)


def _count(store_dir: Path) -> int:
    return len(transcript_events(store_dir)) if (store_dir / "segments").is_dir() else 0


def _wait_for(condition, seconds: float, alive=lambda: True) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return
        assert alive(), "the follower exited early"
        time.sleep(0.05)
    raise AssertionError("timed out")


def _trace_line(n: int, session: str = "s1") -> bytes:
    return orjson.dumps({"id": f"01J0000000000000000000{n:04d}", "seq": n, "hash": "x", "kind": "user",
                         "text": f"message number {n} about port {8000 + n}", "session_id": session}) + b"\n"


def _drive(follower: Follower, steps) -> list:
    """Run the follower in this thread, doing each step between passes."""
    results, todo = [], list(steps)

    def until() -> bool:
        if todo:
            todo.pop(0)()
            return False
        return True
    results.extend(follower.run(until=until))
    return results


def test_a_followed_folder_descends_symlinked_folders_once_even_through_a_cycle(tmp_path):
    tree, moved = tmp_path / "projects", tmp_path / "other-disk" / "proj-b"
    tree.mkdir()
    moved.mkdir(parents=True)
    (tree / "s1.jsonl").write_bytes(_trace_line(1, "s1"))
    (tree / "proj-b").symlink_to(moved)
    (tree / "proj-b-again").symlink_to(moved)
    (moved / "back").symlink_to(tree)                  # a cycle through the link
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(tree)], poll=0.01, settle=0, ingest_options={"embed": False})

    def new_session_behind_the_link():
        (moved / "s2.jsonl").write_bytes(_trace_line(2, "s2"))
    _drive(follower, [lambda: None, new_session_behind_the_link, lambda: None])
    assert sorted((e["session_id"], e["text"].split()[2]) for e in store.events()) == [("s1", "1"), ("s2", "2")]
    assert sorted(follower.state.watched) == [str(tree / "proj-b" / "s2.jsonl"), str(tree / "s1.jsonl")]


def test_truncated_source_is_read_again_and_nothing_is_added_twice(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(_trace_line(n) for n in range(1, 4)))
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(path)], poll=0.01, settle=0, ingest_options={"embed": False})

    def truncate_and_rewrite():
        path.write_bytes(_trace_line(1) + _trace_line(4))     # shorter than before: a truncation
    results = _drive(follower, [lambda: None, truncate_and_rewrite, lambda: None])
    texts = [e["text"] for e in store.events()]
    assert texts == [f"message number {n} about port {8000 + n}" for n in (1, 2, 3, 4)]
    assert sum(r.added for r in results) == 4


def test_rotation_reads_the_old_file_to_its_end_then_follows_the_new_one(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_bytes(_trace_line(1))
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(path)], poll=0.01, settle=0, ingest_options={"embed": False})

    def write_then_rotate():
        with open(path, "ab") as f:
            f.write(_trace_line(2))              # written just before the rename: must not be lost
        os.rename(path, tmp_path / "r.jsonl.1")
        path.write_bytes(_trace_line(3))
    _drive(follower, [lambda: None, write_then_rotate, lambda: None])
    assert [e["seq"] for e in store.events()] == [1, 2, 3]
    assert [e["text"].split()[2] for e in store.events()] == ["1", "2", "3"]


def test_follow_of_stdin_is_a_usage_error():
    run = cli("ingest", "--follow", "-")
    assert run.code == 2 and "--follow needs files" in run.err


def test_a_path_not_there_is_named_once_and_followed_when_it_appears(tmp_path):
    later = tmp_path / "not-yet" / "session.jsonl"
    store_dir = tmp_path / "followed"
    notes = tmp_path / "stderr.txt"
    with open(notes, "wb") as stderr:
        follower = subprocess.Popen([str(TRACE), "--store", str(store_dir), "ingest", "--follow", "--no-embed",
                                     "--poll", "0.05", "--settle", "0.05", str(later.parent)],
                                    stdout=subprocess.PIPE, stderr=stderr)
    try:
        _wait_for(lambda: b"Ctrl-C stops" in notes.read_bytes(), 60, alive=lambda: follower.poll() is None)
        later.parent.mkdir()
        later.write_bytes(_trace_line(1))
        _wait_for(lambda: _count(store_dir) == 1, 60, alive=lambda: follower.poll() is None)
    finally:
        follower.send_signal(signal.SIGTERM)
        follower.communicate(timeout=60)
    err = notes.read_bytes()
    assert follower.returncode == 0, err
    assert err.count(b"is not there (yet): followed once it appears") == 1 and str(later.parent).encode() in err


def test_a_streamed_message_at_the_end_waits_for_its_next_block_or_for_the_file_to_stay_still(tmp_path, monkeypatch):
    import stores.follow.tailer as tailer
    monkeypatch.setattr(tailer, "HOLD_SECONDS", 0.3)
    lines = (SAMPLES / "claude-code" / "demo-session.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:4]))                  # ends with the first block of a streamed reply
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(path)], poll=0.01, settle=0, ingest_options={"embed": False})
    kinds_seen = []

    def look():
        kinds_seen.append([e["kind"] for e in store.events()] if store.exists() else [])
    _drive(follower, [look, lambda: time.sleep(0.4), lambda: None, look])
    assert "assistant" not in kinds_seen[0]               # held: its next block may come
    assert "assistant" in kinds_seen[-1]                  # still for HOLD_SECONDS: read


def test_lines_before_the_one_naming_the_session_wait_while_the_file_may_still_grow(tmp_path, monkeypatch):
    import stores.follow.tailer as tailer
    monkeypatch.setattr(tailer, "HOLD_SECONDS", 30)
    lines = (SAMPLES / "claude-code" / "demo-session.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines[0])                             # a leading summary line: no sessionId yet
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(path)], poll=0.01, settle=0, ingest_options={"embed": False})
    seen = []

    def look():
        seen.append(len(store.events()) if store.exists() else 0)
    _drive(follower, [look, lambda: path.write_bytes(b"".join(lines)), lambda: None])
    assert seen == [0]                                     # not written under a session guessed from the file name
    sessions = {e["session_id"] for e in transcript_events(tmp_path / "store")}
    assert sessions == {orjson.loads(lines[2])["sessionId"]}


@pytest.mark.parametrize("gone", ["deleted", "renamed out of the suffixes"])
def test_a_file_in_a_followed_directory_that_goes_away_is_read_to_its_end_first(tmp_path, gone):
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(_trace_line(1))
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(folder)], poll=0.01, settle=30, ingest_options={"embed": False})

    def write_then_remove():               # gone before the file settled: only the open inode still holds these
        with open(path, "ab") as f:
            f.write(_trace_line(2))
        if gone == "deleted":
            path.unlink()
        else:
            path.rename(folder / "s.jsonl.1")
    _drive(follower, [lambda: None, write_then_remove, lambda: None])
    assert [e["text"].split()[2] for e in store.events()] == ["1", "2"]
    assert follower.state.watched == {} and follower.state.retired == []


def _start_following(tmp_path, hangup) -> tuple[subprocess.Popen, Path, Path]:
    """A `trace ingest --follow` started with SIGHUP as `hangup` (SIG_DFL: a
    terminal's job; SIG_IGN: under nohup), whatever the test run inherited:
    a suite started under nohup passes SIG_IGN on to every child."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_trace_line(1))
    store_dir = tmp_path / "followed"
    notes = tmp_path / "stderr.txt"
    with open(notes, "wb") as stderr:
        follower = subprocess.Popen([str(TRACE), "--store", str(store_dir), "ingest", "--follow", "--no-embed",
                                     "--poll", "0.05", "--settle", "30", str(path)], stdout=subprocess.PIPE,
                                    stderr=stderr, preexec_fn=lambda: signal.signal(signal.SIGHUP, hangup))
    return follower, store_dir, notes


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_ctrl_c_or_a_closed_terminal_stops_it_after_a_last_pass(tmp_path, sig):
    follower, store_dir, notes = _start_following(tmp_path, signal.SIG_DFL)
    try:
        _wait_for(lambda: b"Ctrl-C stops" in notes.read_bytes(), 60, alive=lambda: follower.poll() is None)
    finally:
        follower.send_signal(sig)
        follower.communicate(timeout=60)
    assert follower.returncode == 0, notes.read_bytes()
    assert b"stopped; every event read is on disk" in notes.read_bytes()
    assert _count(store_dir) == 1                  # still settling (30 s): read by the last pass


def test_under_nohup_a_closed_terminal_does_not_stop_it(tmp_path):
    follower, store_dir, notes = _start_following(tmp_path, signal.SIG_IGN)
    try:
        _wait_for(lambda: b"Ctrl-C stops" in notes.read_bytes(), 60, alive=lambda: follower.poll() is None)
        follower.send_signal(signal.SIGHUP)
        time.sleep(1)                                  # a stop takes one last pass over one line
        assert follower.poll() is None and b"stopped" not in notes.read_bytes()   # ignored, as nohup asked
    finally:
        follower.send_signal(signal.SIGTERM)
        follower.communicate(timeout=60)
    assert follower.returncode == 0, notes.read_bytes()
    assert _count(store_dir) == 1


def test_a_file_it_may_not_read_is_named_once_and_followed_once_it_can_be(tmp_path, monkeypatch):
    import stores.follow.tailer as tailer
    path = tmp_path / "s.jsonl"
    path.write_bytes(_trace_line(1))
    denied = {str(path)}
    real_open = os.open

    def guarded_open(name, flags, *args, **kwargs):     # chmod 000 means nothing to root: refuse it here
        if str(name) in denied:
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, flags, *args, **kwargs)
    monkeypatch.setattr(tailer.os, "open", guarded_open)
    notes = []
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(path)], poll=0.01, settle=0, note=notes.append, ingest_options={"embed": False})
    _drive(follower, [lambda: None, lambda: None, denied.clear, lambda: None])
    said = [n for n in notes if "Permission denied" in n]
    assert said == [f"{path}: cannot read it (Permission denied); followed once it can be read"]
    assert [e["text"].split()[2] for e in store.events()] == ["1"]


def test_a_fifo_among_the_transcripts_is_passed_over_not_waited_on(tmp_path):
    import threading
    folder = tmp_path / "sessions"
    folder.mkdir()
    fifo = folder / "pipe.jsonl"
    os.mkfifo(fifo)                                   # opening it for reading would wait for a writer forever
    (folder / "s.jsonl").write_bytes(_trace_line(1))
    store = Store(tmp_path / "store")
    follower = Follower(store, [str(folder)], poll=0.01, settle=0, ingest_options={"embed": False})
    worker = threading.Thread(target=_drive, args=(follower, [lambda: None, lambda: None]), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():                             # free the blocked open before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(20)
        pytest.fail("the follower waited on the FIFO")
    assert [e["text"].split()[2] for e in store.events()] == ["1"]
