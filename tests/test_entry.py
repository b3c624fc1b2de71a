"""The `trace` executable's first step (trace_cli/entry.py)."""
from __future__ import annotations

import os

import pytest

from trace_cli import entry


@pytest.mark.parametrize("chosen, after", [(None, "1"), ("4", "4")])
def test_blas_runs_one_thread_unless_the_user_chose(monkeypatch, chosen, after):
    """numpy's OpenBLAS worker threads spin on the other cores after it
    loads: a `trace` process runs one BLAS thread, unless the user set it."""
    import trace_cli.resident.client as client
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", chosen or "")     # (restored after the test, set or not)
    if chosen is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.delenv("TRACE_SET_OPENBLAS_THREADS", raising=False)
    monkeypatch.setattr(client, "run_resident", lambda argv: 0)       # as if a server ran the command
    assert entry.main() == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == after


@pytest.mark.parametrize("chosen, child", [(None, None), ("4", "4")])
def test_a_sweeps_model_command_gets_the_users_blas_threads_back(monkeypatch, chosen, child):
    """The one BLAS thread is TRACE's own choice: a --llm-cmd child runs
    with what the user had (unset stays unset, a chosen count is kept)."""
    import trace_cli.resident.client as client
    from stores.sweep.llm import users_environment
    monkeypatch.delenv("TRACE_SET_OPENBLAS_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", chosen or "")
    if chosen is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setattr(client, "run_resident", lambda argv: 0)
    assert entry.main() == 0
    env = users_environment()
    assert env.get("OPENBLAS_NUM_THREADS") == child and "TRACE_SET_OPENBLAS_THREADS" not in env
    assert os.environ["OPENBLAS_NUM_THREADS"] == (chosen or "1")
