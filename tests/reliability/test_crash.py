"""SIGKILL at seeded random moments during ingest, compact, index and sweep (the
harness is tests/reliability/crash_harness.py): after every kill the log
verifies, holds no event twice and no gap; after a clean run everything
is there once and verify is clean. `make test` runs a short slice (a few
kills, small sources); `make soak` 50+ kills per operation."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

SOAK_SEED = int(os.environ.get("TRACE_CRASH_SEED", "1"))


def _harness(tmp_path, op: str, kills: int, seed: int, conversations: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TRACE_DEBUG", None)
    env.pop("TRACE_HOME", None)
    run = subprocess.run([sys.executable, "-m", "tests.reliability.crash_harness", "--op", op, "--kills", str(kills),
                          "--seed", str(seed), "--conversations", str(conversations), "--work", str(tmp_path / op)],
                         env=env, cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize("op", ["ingest", "compact", "index", "sweep"])
def test_a_short_seeded_slice_of_kills_leaves_nothing_lost_or_doubled(tmp_path, op):
    report = _harness(tmp_path, op, kills=3, seed=24, conversations=12)
    assert report["kills"] == 3, report
    assert report["violations"] == [], report


@pytest.mark.soak
@pytest.mark.parametrize("op", ["ingest", "compact", "index", "sweep"])
def test_fifty_kills_per_operation_soak(tmp_path, op):
    report = _harness(tmp_path, op, kills=50, seed=SOAK_SEED, conversations=120)
    assert report["kills"] >= 50, report
    assert report["violations"] == [], report
