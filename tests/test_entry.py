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
    monkeypatch.setattr(client, "run_resident", lambda argv: 0)       # as if a server ran the command
    assert entry.main() == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == after
