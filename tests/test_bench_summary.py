"""`trace bench ingest` reports each phase against the SQLite peer run on
the same machine (a figure that compares runs across days) and how peak
memory grows from 10% to 100% of the size."""
from __future__ import annotations

from trace_cli.bench.ingest_bench import _summarise


def _row(size, phase, events, seconds, rss, anon):
    return {"size": size, "phase": phase, "events": events, "seconds": seconds, "rss_mb": rss, "anon_mb": anon}


def test_append_and_ingest_are_set_against_the_peer_and_memory_growth_is_a_ratio():
    rows = [_row("10%", "append", 100, 1.0, 40, 30), _row("10%", "sqlite", 100, 2.0, 30, 20),
            _row("10%", "ingest", 100, 10.0, 200, 150),
            _row("100%", "append", 1000, 8.0, 41, 31), _row("100%", "sqlite", 1000, 20.0, 30, 20),
            _row("100%", "ingest", 1000, 80.0, 220, 210), _row("100%", "ingest", 1000, 120.0, 230, 200)]
    by = {(r["size"], r["phase"]): r for r in _summarise(rows)}
    assert by[("10%", "append")]["vs_sqlite"] == 2.0
    assert by[("10%", "ingest")]["vs_sqlite"] == 0.2
    full = by[("100%", "ingest")]
    assert full["runs"] == 2 and full["events_per_s_median"] == 10                 # median of 12.5 and 8.3
    assert full["vs_sqlite"] == 0.2 and by[("100%", "append")]["vs_sqlite"] == 2.5
    assert full["rss_growth_vs_10pct"] == 1.15 and full["anon_growth_vs_10pct"] == 1.4
    assert "vs_sqlite" not in by[("100%", "sqlite")]


def test_the_fts5_peer_is_the_second_ratio_and_is_not_set_against_itself():
    rows = [_row("10%", "sqlite", 100, 1.0, 30, 20), _row("10%", "sqlite+fts5", 100, 4.0, 30, 20),
            _row("10%", "ingest", 100, 10.0, 200, 150),
            _row("100%", "sqlite", 1000, 10.0, 30, 20), _row("100%", "sqlite+fts5", 1000, 40.0, 31, 21),
            _row("100%", "ingest", 1000, 50.0, 220, 210)]
    by = {(r["size"], r["phase"]): r for r in _summarise(rows)}
    assert by[("100%", "ingest")]["vs_sqlite"] == 0.2 and by[("100%", "ingest")]["vs_sqlite_fts5"] == 0.8
    assert by[("10%", "ingest")]["vs_sqlite_fts5"] == 0.4
    assert "vs_sqlite_fts5" not in by[("100%", "sqlite+fts5")] and "vs_sqlite" not in by[("100%", "sqlite+fts5")]
