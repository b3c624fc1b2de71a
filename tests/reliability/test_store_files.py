"""Defects 3 and 7: the files around the log. Temporary copies of a
transcript (unredacted) live only in the store's own private tmp/ and do
not outlive a crash; nothing is written through a symbolic link planted
in the store; a store folder others could read is tightened."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from stores.store import Store
from tests.conftest import REPO
from tests.helpers import cli, openai_conversations

SECRET = "sk-proj-" + "Q7" * 24


def _big_line_transcript(path, mb: int = 9):
    output = f"build log with a key {SECRET} in it\n" * (mb * 1024 * 1024 // 60)
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "build"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output}]}) + "\n")
    return path


@pytest.fixture
def system_tmp(tmp_path, monkeypatch):
    """The system temp folder, empty: nothing of TRACE's may appear there."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _ours(folder) -> list:
    """What is in the folder besides tiktoken's cache of its public encoding file."""
    return [p for p in folder.iterdir() if p.name != "data-gym-cache"]


def test_a_huge_line_spills_inside_the_store_and_leaves_nothing(tmp_path, trace_home, system_tmp, monkeypatch):
    from stores.ingest.big_lines import SpillRegistry
    seen = []
    real_new_file = SpillRegistry.new_file

    def watched(self):
        marker, f = real_new_file(self)
        seen.append(self.spills[marker].path)
        return marker, f
    monkeypatch.setattr(SpillRegistry, "new_file", watched)
    run = cli("ingest", "--no-embed", str(_big_line_transcript(tmp_path / "big.jsonl")))
    assert run.code == 0, run.err
    assert seen and all(name.startswith(str(trace_home / "tmp") + os.sep) for name in seen)
    assert _ours(system_tmp) == []
    assert list((trace_home / "tmp").iterdir()) == []              # no spill folder left, not even empty


def test_stdin_is_spooled_inside_the_store_and_removed(tmp_path, trace_home, system_tmp):
    data = openai_conversations(tmp_path / "c.jsonl", 2).read_bytes()
    assert cli("ingest", "--no-embed", "-", "--session", "piped", stdin=data).code == 0
    assert _ours(system_tmp) == []
    assert list((trace_home / "tmp").iterdir()) == []


def test_what_a_killed_writer_left_in_tmp_is_removed_when_the_next_one_starts(tmp_path, trace_home):
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    spill = trace_home / "tmp" / "spill-x1"
    spill.mkdir()
    (spill / "0.txt").write_text(SECRET)
    (trace_home / "tmp" / "stdin-abc.jsonl").write_text(SECRET)
    (trace_home / "fulltext.rebuilding").mkdir()                   # a rebuild it did not finish
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))).code == 0
    assert list((trace_home / "tmp").iterdir()) == []
    assert not (trace_home / "fulltext.rebuilding").exists()


def test_a_sigkilled_huge_line_ingest_leaves_its_spill_only_in_tmp_until_the_next_writer(tmp_path, system_tmp):
    home = tmp_path / "home"
    src = _big_line_transcript(tmp_path / "big.jsonl", mb=40)
    env = {**os.environ, "TRACE_HOME": str(home), "PYTHONPATH": str(REPO), "TMPDIR": str(system_tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "trace_cli", "ingest", "--no-embed", str(src)], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:                                  # kill it once a spill file is being written
        spills = list((home / "tmp").glob("spill-*/*.txt")) if (home / "tmp").is_dir() else []
        if spills and spills[0].stat().st_size > 1 << 20:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert spills, "the ingest finished before a spill file was seen"
    assert _ours(system_tmp) == []
    assert cli("--store", str(home), "ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    assert list((home / "tmp").iterdir()) == []


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, trace_home):
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    target = tmp_path / "precious.txt"
    target.write_text("do not truncate me\n")
    (trace_home / "LOCK").unlink()
    (trace_home / "LOCK").symlink_to(target)
    run = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")))
    assert run.code == 1 and "LOCK is a symbolic link" in run.err and "rm " in run.err
    assert target.read_text() == "do not truncate me\n"


def test_a_symlinked_retrieval_log_is_not_followed(tmp_path, trace_home):
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 2))).code == 0
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    (trace_home / "retrievals.jsonl").unlink(missing_ok=True)
    (trace_home / "retrievals.jsonl").symlink_to(target)
    run = cli("recall", "config_1_1.yaml", "--mode", "fulltext")
    assert run.code == 0 and run.lines() and "symbolic link, never followed" in run.err
    assert target.read_text() == ""


@pytest.mark.parametrize("name", ["fulltext", "vectors", "state.db", "cache", "tmp"])
def test_a_symlinked_derived_file_is_replaced_and_what_it_points_to_untouched(tmp_path, trace_home, name):
    assert cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3))).code == 0
    assert cli("compact", "--session", Store(trace_home).stats().by_session[0]["session_id"], "--budget", "300",
               "--headroom", "10").code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    target = outside / "keep.txt" if name == "state.db" else outside
    path = trace_home / name
    if path.is_dir():
        import shutil
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.symlink_to(target)
    for args in (["verify"], ["recall", "config_2_1.yaml", "--mode", "fulltext"],
                 ["ingest", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))], ["verify", "--repair"],
                 ["compact", "--session", Store(trace_home).stats().by_session[0]["session_id"], "--budget", "300",
                  "--headroom", "10"]):
        run = cli(*args)
        assert run.code in (0, 6), (args, run.err)
        assert "Traceback" not in run.err and "please report" not in run.err
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"] and (outside / "keep.txt").read_text() == "mine"
    assert not path.is_symlink() or name == "tmp"
    assert cli("verify").code == 0


def test_a_symlinked_active_segment_is_refused(tmp_path, trace_home):
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    seg = Store(trace_home).segments()[-1].path
    moved = tmp_path / "moved.jsonl"
    seg.rename(moved)
    seg.symlink_to(moved)
    size = moved.stat().st_size
    run = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")))
    assert run.code == 1 and "is a symbolic link" in run.err
    assert moved.stat().st_size == size


def test_a_store_folder_others_can_read_is_tightened(tmp_path, trace_home):
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    os.chmod(trace_home, 0o755)
    os.chmod(trace_home / "segments", 0o775)
    run = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")))
    assert run.code == 0 and "could be read by others (mode 755): tightened to 700" in run.err
    assert stat.S_IMODE(os.stat(trace_home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(trace_home / "segments").st_mode) == 0o700


def test_tmp_entries_of_a_running_process_are_kept_and_a_dead_ones_removed(tmp_path, trace_home):
    """`trace anatomy record` spools into tmp/ without the writer lock: a
    writer starting meanwhile must not pull its files away."""
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        (trace_home / "tmp" / f"stdin-{alive.pid}-x.jsonl").write_text(SECRET)
        (trace_home / "tmp" / f"stdin-{dead.pid}-y.jsonl").write_text(SECRET)
        assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"))).code == 0
        assert sorted(p.name for p in (trace_home / "tmp").iterdir()) == [f"stdin-{alive.pid}-x.jsonl"]
    finally:
        alive.kill()
        alive.wait()
