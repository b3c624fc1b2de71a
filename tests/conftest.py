"""Test-wide fixtures: every test gets its own store (TRACE_HOME under
tmp_path) so nothing touches the developer's real store."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# `make test` replays the same generated examples every run, so CI never
# turns red on a case no change brought; `make soak` explores new ones.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("explore" if os.environ.get("TRACE_FUZZ_EXPLORE") else "repeatable")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TRACE_SHARED", REPO.parent / "shared"))
SAMPLES = REPO / "sample_sessions"


@pytest.fixture(autouse=True)
def trace_home(tmp_path, monkeypatch):
    home = tmp_path / "trace-home"
    monkeypatch.setenv("TRACE_HOME", str(home))
    monkeypatch.delenv("TRACE_SEGMENT_BYTES", raising=False)
    monkeypatch.delenv("TRACE_RECONCILE", raising=False)
    return home


@pytest.fixture
def shared_transcripts() -> Path:
    path = SHARED / "transcripts"
    if not path.is_dir():
        pytest.skip(f"real transcripts not found at {path} (clone ../shared beside the repo)")
    return path


@pytest.fixture
def samples() -> Path:
    return SAMPLES
