"""A sweep killed at any point, then run again, leaves exactly what one
clean run leaves: ledger, facts, episodes, tuning and watermark, byte for
byte (only the wall-clock run log differs)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import stores.sweep.files as files
import stores.sweep.runner as runner
from stores.store import Store
from stores.sweep import run_sweep
from tests.conftest import REPO
from tests.helpers import cli
from tests.sessions import ClaudeSession

COMPARED = ("ledger.jsonl", "knowledge.jsonl", "episodes.jsonl", "tuning.json", "sweep/state.json")


class Killed(BaseException):
    """Stands for the process dying (not an Exception: nothing may catch it)."""


def _scenario_store(home) -> Store:
    for f in sorted((Path(__file__).parent / "fixtures" / "sweep_scenario").glob("*.jsonl")):
        assert cli("--store", str(home), "ingest", "--no-embed", str(f)).code == 0
    return Store(home)


def _sweep_files(home) -> dict[str, bytes]:
    return {name: (home / name).read_bytes() for name in COMPARED}


@pytest.fixture(scope="module")
def swept_template(tmp_path_factory):
    """The scenario ingested once, and a copy swept cleanly, for every test here."""
    base = tmp_path_factory.mktemp("scenario")
    _scenario_store(base / "store")
    shutil.copytree(base / "store", base / "clean")
    run_sweep(Store(base / "clean"))
    return base


@pytest.fixture
def twin_stores(tmp_path, swept_template):
    """Two identical stores: one to crash, one the clean run left."""
    a, b = tmp_path / "crashed", tmp_path / "clean"
    shutil.copytree(swept_template / "store", a)
    shutil.copytree(swept_template / "clean", b)
    return a, b


def test_killed_in_the_middle_of_reading(twin_stores, monkeypatch):
    crashed, clean = twin_stores
    monkeypatch.setattr(runner, "CHUNK_EVENTS", 7)
    real = runner._decide_chunk
    seen = []

    def dying(chunk, *args):
        seen.append(chunk)
        if len(seen) == 3:
            raise Killed()
        return real(chunk, *args)
    monkeypatch.setattr(runner, "_decide_chunk", dying)
    with pytest.raises(Killed):
        run_sweep(Store(crashed))
    monkeypatch.setattr(runner, "_decide_chunk", real)
    assert not (crashed / "ledger.jsonl").exists()          # nothing was committed
    run_sweep(Store(crashed))
    assert _sweep_files(crashed) == _sweep_files(clean)


def test_killed_after_staging_before_the_commit_point(twin_stores, monkeypatch):
    crashed, clean = twin_stores
    real = files.write_atomic

    def dying(path, chunks):
        if path.name == "commit.json":
            raise Killed()
        return real(path, chunks)
    monkeypatch.setattr(files, "write_atomic", dying)
    with pytest.raises(Killed):
        run_sweep(Store(crashed))
    monkeypatch.setattr(files, "write_atomic", real)
    assert (crashed / "ledger.jsonl.new").exists() and not (crashed / "ledger.jsonl").exists()
    report = run_sweep(Store(crashed))
    assert report.recovered == "dropped an interrupted sweep's uncommitted files"
    assert _sweep_files(crashed) == _sweep_files(clean)


@pytest.mark.parametrize("installed", [0, 1, 3])
def test_killed_after_the_commit_point_part_way_through_installing(twin_stores, monkeypatch, installed):
    crashed, clean = twin_stores
    real = os.replace
    done = []

    def dying(src, dst):
        if str(src).endswith(files.STAGED):
            if len(done) == installed:
                raise Killed()
            done.append(dst)
        return real(src, dst)
    monkeypatch.setattr(files.os, "replace", dying)
    with pytest.raises(Killed):
        run_sweep(Store(crashed))
    monkeypatch.setattr(files.os, "replace", real)
    assert (crashed / files.JOURNAL).exists()
    report = run_sweep(Store(crashed))        # finishes the commit, then finds nothing new
    assert report.recovered == "finished an interrupted sweep's commit" and report.events == 0
    assert _sweep_files(crashed) == _sweep_files(clean)


def _big_store(home, sessions: int = 40, turns: int = 40) -> None:
    src = home.parent / "big"
    src.mkdir(exist_ok=True)
    for i in range(sessions):
        s = ClaudeSession(f"big-{i}", day=f"2026-04-{1 + i % 28:02d}")
        for t in range(turns):
            s.user(f"Set the worker pool size to {t + i} for the batch job {i}; the cache TTL is now {t}s.")
            s.assistant(f"Done. We decided to use queue-{t % 3} for the job {i} scheduler.")
        s.write(src / f"s{i}.jsonl")
    assert cli("--store", str(home), "ingest", "--no-embed", str(src)).code == 0


@pytest.fixture(scope="module")
def big_template(tmp_path_factory):
    base = tmp_path_factory.mktemp("big")
    _big_store(base / "store")
    shutil.copytree(base / "store", base / "clean")
    run_sweep(Store(base / "clean"))
    return base


@pytest.mark.parametrize("delay", [0.4, 1.2])
def test_a_sweep_killed_by_sigkill_and_run_again_equals_one_clean_run(tmp_path, big_template, delay):
    crashed, clean = tmp_path / "crashed", big_template / "clean"
    shutil.copytree(big_template / "store", crashed)
    env = {**os.environ, "TRACE_HOME": str(crashed), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "trace_cli", "sweep"], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run_sweep(Store(crashed))
    assert _sweep_files(crashed) == _sweep_files(clean)
