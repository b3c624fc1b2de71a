"""Long runs (`make soak`): a 100 MB single-line tool output with bounded
memory, and the property tests at many more examples."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO

pytestmark = pytest.mark.soak


def _tool_output_transcript(path, output: str):
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "build it"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output}]}, ensure_ascii=False) + "\n")
    return path


def _ingest_peak_mb(src, home) -> float:
    """Peak resident memory of `trace ingest SRC` in its own process."""
    env = {**os.environ, "TRACE_HOME": str(home), "PYTHONPATH": str(REPO)}
    # VmHWM, not ru_maxrss: after fork + exec, ru_maxrss still counts the
    # parent's image (a pytest process that imported every test module).
    probe = ("import re, sys; from trace_cli.app import main; code = main(sys.argv[1:]); "
             "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1), file=sys.stderr); "
             "sys.exit(code)")
    r = subprocess.run([sys.executable, "-c", probe, "ingest", str(src)], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return int(r.stderr.strip().splitlines()[-1]) / 1024


def test_a_100_mb_single_line_tool_output_streams_to_an_artifact_with_bounded_memory(tmp_path):
    row = "{:08d} build step output with \"quotes\", \\backslashes\\ and é\n"
    baseline = _ingest_peak_mb(_tool_output_transcript(tmp_path / "small.jsonl",
                                                       "".join(row.format(i) for i in range(16_500))), tmp_path / "h1")
    line = "".join(row.format(i) for i in range(1_650_000))
    assert len(line) > 100_000_000
    src = _tool_output_transcript(tmp_path / "big.jsonl", line)
    digest = hashlib.sha256(line.encode()).hexdigest()
    del line
    peak_mb = _ingest_peak_mb(src, tmp_path / "home")
    # flat: a line 100x longer (1 MB -> 100 MB) costs at most 64 MB more than the small one's peak
    assert peak_mb < baseline + 64, f"peak RSS {peak_mb:.0f} MB for a 100 MB line, {baseline:.0f} MB for 1 MB"
    env = {**os.environ, "TRACE_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "trace_cli", "show", "3", "--full"], env=env, cwd=REPO,
                         capture_output=True, timeout=300)
    assert hashlib.sha256(out.stdout).hexdigest() == digest


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.text(min_size=1, max_size=500))
def test_no_query_string_raises_soak(query, tmp_path_factory):
    from stores.recall import Recaller, RecallQuery
    from stores.store import Store
    global _SOAK_STORE
    if "_SOAK_STORE" not in globals():
        from trace_cli.bench.needles import build_session
        root = tmp_path_factory.mktemp("soak")
        build_session(turns=100, needles=10).write_openai(root / "s.jsonl")
        store = Store(root / "store")
        list(store.ingest([str(root / "s.jsonl")]))
        _SOAK_STORE = Recaller(store)
        _SOAK_STORE.prepare("hybrid")
    q = RecallQuery(query=query, k=5)
    try:
        q.validate()
    except Exception:
        return
    _SOAK_STORE.recall(q)
