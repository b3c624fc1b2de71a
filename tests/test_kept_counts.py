"""A runtime starts a `trace context` process before every model call.
Such a process counts tokens in pure Python, so each render keeps its
counts beside the session's cache and the next cold render counts only
what is new. The counts are a shortcut only: the pack is the same with
them, without them, and with a damaged file, which is not believed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from reducers import tokens
from stores.context import compact
from stores.store import Store
from tests.conftest import REPO
from tests.helpers import cli
from trace_cli.bench.needles import build_session


def _compacted_session(tmp_path) -> None:
    s = build_session(turns=60, needles=3, seed=5, tag="kc")
    path = tmp_path / "kc.json"
    path.write_text(json.dumps(s.messages))
    assert cli("ingest", str(path), "--session", "kc").code == 0
    assert compact(Store(), "kc", budget=2500, reflect=False).fits


def _cold_context(trace_home) -> bytes:
    run = subprocess.run([sys.executable, "-m", "trace_cli", "context", "--session", "kc", "--budget", "2500"],
                         cwd=REPO, env={**os.environ, "TRACE_HOME": str(trace_home), "TRACE_SERVE": "0"},
                         capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    return run.stdout


def _counts_file(trace_home):
    found = list((trace_home / "cache").glob("*.counts.json"))
    assert len(found) == 1
    return found[0]


def test_a_cold_render_keeps_its_counts_and_the_next_renders_the_same_pack(tmp_path, trace_home):
    _compacted_session(tmp_path)
    first = _cold_context(trace_home)
    kept = json.loads(_counts_file(trace_home).read_bytes())
    assert kept["session_id"] == "kc" and len(kept["counts"]) > 20
    assert _cold_context(trace_home) == first
    _counts_file(trace_home).unlink()
    assert _cold_context(trace_home) == first


def test_an_edited_counts_file_is_not_believed_and_verify_names_it(tmp_path, trace_home):
    _compacted_session(tmp_path)
    first = _cold_context(trace_home)
    path = _counts_file(trace_home)
    kept = json.loads(path.read_bytes())
    for value in kept["counts"].values():
        value[0] = 1                                  # every text "one token": a pack far over budget if believed
    path.write_text(json.dumps(kept))
    checked = cli("verify")
    assert checked.code == 6 and "counts.json" in checked.out and "checksum" in checked.out
    assert _cold_context(trace_home) == first


def test_a_kept_count_stands_in_for_counting_and_new_counts_are_reported():
    known_text, new_text = "kept-count probe 7f3e a b c", "kept-count probe 91d2 d e f"
    known = {tokens.text_digest(known_text): 99}
    tokens.remember_counts(known)
    try:
        assert tokens.count_tokens(known_text) == 99
        fresh = tokens.count_tokens(new_text)
    finally:
        used, added = tokens.forget_counts()
    assert not tokens.remembering()
    assert used == {tokens.text_digest(known_text): 99, tokens.text_digest(new_text): fresh}
    assert added == 1 and fresh == len(tokens.encode(new_text))
