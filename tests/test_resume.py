"""A grown Claude Code transcript is read from a little before where its
last ingest ended (the hooks' fast path), and the log ends exactly as a
one-shot ingest of the whole file leaves it: same events, same keys, turns,
tool pairing, times and meta, in the same order."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import stores.ingest.sources
from stores.store import Store
from tests.helpers import cli, transcript_events
from trace_cli.bench.hooks_bench import _write_turns


def _essence(store_dir: Path) -> list[tuple]:
    return [(e["session_id"], e.get("turn_id"), e["kind"], e["text"], e.get("ts"),
             orjson.dumps(e.get("tool"), option=orjson.OPT_SORT_KEYS),
             orjson.dumps(e.get("meta"), option=orjson.OPT_SORT_KEYS, default=str),
             e["source"].get("key"), tuple(e["source"].get("merged") or ()), e["source"].get("line"))
            for e in transcript_events(store_dir)]


@pytest.fixture
def restarts(monkeypatch):
    """Where ingest restarted parsing (None: it read the whole file)."""
    seen = []
    real = stores.ingest.sources.restart_point

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]
    monkeypatch.setattr(stores.ingest.sources, "restart_point", spy)
    return seen


def _grow_and_compare(tmp_path, full_bytes: bytes, cuts: list[float], restarts, must_resume: bool = True) -> None:
    lines = full_bytes.splitlines(keepends=True)
    live = tmp_path / "live" / "session.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(b"")
    # Cut after the first line naming the session: lines before it wait for it
    # in any ingest (a file cut there is another file), resumed or not.
    named = next(i for i, line in enumerate(lines) if b'"sessionId"' in line) + 1
    for frac in cuts:
        live.write_bytes(b"".join(lines[:max(named, int(len(lines) * frac))]))
        assert cli("--store", str(tmp_path / "grown"), "ingest", "--no-embed", str(live)).code == 0
    live.write_bytes(full_bytes)
    again = cli("--store", str(tmp_path / "grown"), "ingest", "--no-embed", str(live)).lines()[0]
    whole = tmp_path / "whole" / "session.jsonl"                # same name: derived ids match
    whole.parent.mkdir(parents=True)
    whole.write_bytes(full_bytes)
    assert cli("--store", str(tmp_path / "one-shot"), "ingest", "--no-embed", str(whole)).code == 0
    if must_resume:
        assert any(r is not None for r in restarts), "the grown file was read from the top every time"
        assert again["skipped"] < len(lines) // 2             # it did not read everything again
    grown, one_shot = _essence(tmp_path / "grown"), _essence(tmp_path / "one-shot")
    assert [g[:-1] for g in grown] == [o[:-1] for o in one_shot]
    assert [g[-1] for g in grown] == [o[-1] for o in one_shot]  # line numbers too


def test_a_long_session_grown_turn_by_turn_ends_as_a_one_shot_ingest(tmp_path, restarts):
    path = tmp_path / "gen.jsonl"
    _write_turns(path, 0, 600, None)
    _grow_and_compare(tmp_path, path.read_bytes(), [0.3, 0.55, 0.8], restarts)


@pytest.mark.shared
def test_real_transcripts_grown_in_steps_end_as_one_shot_ingests(shared_transcripts, tmp_path, restarts):
    big = [p for p in sorted((shared_transcripts / "claude_code").glob("*.jsonl")) if p.stat().st_size > 100_000]
    if not big:
        pytest.skip("no Claude Code transcript over 100 kB among the shared ones")
    for i, path in enumerate(big):
        _grow_and_compare(tmp_path / f"t{i}", path.read_bytes(), [0.25, 0.5, 0.75, 0.9], restarts, must_resume=False)
    assert any(r is not None for r in restarts)


def test_a_rewritten_head_or_a_shrunk_file_is_read_whole(tmp_path, restarts):
    path = tmp_path / "gen.jsonl"
    _write_turns(path, 0, 300, None)
    data = path.read_bytes()
    live = tmp_path / "s.jsonl"
    live.write_bytes(data[:len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    assert cli("--store", str(tmp_path / "st"), "ingest", "--no-embed", str(live)).code == 0
    live.write_bytes(data.replace(b"Step 0:", b"Step 0 (edited):", 1))      # the head changed: no resume
    assert cli("--store", str(tmp_path / "st"), "ingest", "--no-embed", str(live)).code == 0
    assert restarts == []
    assert any("Step 0 (edited):" in e["text"] for e in Store(tmp_path / "st").events())
