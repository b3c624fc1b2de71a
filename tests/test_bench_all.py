"""`trace bench all`: one command runs every benchmark and writes one JSON
report and one Markdown report in which every section is present, either
with measured numbers or skipped with the reason (LoCoMo when ../shared
has no dev set). --quick is the smoke test run here; nothing is timed."""
from __future__ import annotations

import json
import math
import shutil

import pytest

from tests.conftest import SAMPLES
from tests.helpers import cli
from trace_cli.bench.suite import SECTIONS, TITLES

NUMERIC = {
    "cold_start": ["wall_ms_median", "cpu_ms_median", "peak_rss_mb"],
    "ingest": ["events_per_s_median", "seconds_median", "peak_rss_mb_max"],
    "recall": ["fulltext_p50_ms", "hybrid_p50_ms", "exact_p50_ms", "grep_p50_ms", "fts5_p50_ms",
               "fulltext_vs_fts5", "tantivy_p50_ms", "cold_fulltext_ms"],
    "needle": [],
    "context": [],
    "sweep": ["events_per_s_median", "scan_events_per_s", "vs_scan"],
    "redact": ["cpu_s_median", "us_per_item"],
    "hooks": ["hook_p50_ms", "peer_cli_start_p50_ms", "hook_p95_vs_peer_p95", "hook_cpu_p50_ms",
              "peer_cli_start_cpu_p50_ms"],
}


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


@pytest.fixture
def shared_without_locomo(tmp_path):
    """A ../shared with transcripts (two of the repo's own samples) but no
    LoCoMo dev set."""
    root = tmp_path / "shared"
    (root / "transcripts" / "claude-code").mkdir(parents=True)
    (root / "transcripts" / "codex").mkdir()
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", root / "transcripts" / "claude-code")
    shutil.copy(SAMPLES / "codex" / "rollout-demo.jsonl", root / "transcripts" / "codex")
    return root


def test_quick_run_reports_every_section_with_numbers_and_skips_locomo_with_its_reason(
        tmp_path, shared_without_locomo):
    md = tmp_path / "bench.md"
    run = cli("bench", "all", "--quick", "--shared", str(shared_without_locomo), "--md-out", str(md))
    assert run.code == 0, run.err[-2000:]
    report = json.loads(run.out)                   # stdout is piped: the JSON report
    sections = {s["name"]: s for s in report["sections"]}
    assert list(sections) == list(SECTIONS)
    assert report["machine"]["cpus"] >= 1 and len(report["machine"]["load_after"]) == 3

    locomo = sections.pop("locomo")
    assert locomo["status"] == "skipped" and locomo["rows"] == []
    assert "locomo-dev" in locomo["reason"] and str(shared_without_locomo) in locomo["reason"]

    for name, section in sections.items():
        assert section["status"] == "ok", (name, section.get("reason"))
        assert section["rows"], name
        assert _number(section["wall_s"]) and section["peak_rss_mb"] > 0, name
        for row in section["rows"]:
            for key in NUMERIC[name]:
                assert _number(row.get(key)), (name, key, row)

    phases = {(r["size"], r["phase"]) for r in sections["ingest"]["rows"]}
    assert {(s, p) for s in ("10%", "100%") for p in ("append", "sqlite", "sqlite+fts5", "ingest")} <= phases
    full = next(r for r in sections["ingest"]["rows"] if r["size"] == "100%" and r["phase"] == "ingest")
    assert _number(full["vs_sqlite"]) and _number(full["vs_sqlite_fts5"])

    recall = sections["recall"]["rows"][0]
    assert recall["events"] == 500
    assert _number(recall.get("rg_p50_ms")) or "not installed" in recall["rg_skipped"]

    assert [r["command"] for r in sections["cold_start"]["rows"]][:2] == ["python -c pass", "trace --help"]
    assert {r["strategy"] for r in sections["needle"]["rows"] if r["bench"] == "needle"} == \
        {"pointer", "truncate", "narrative"}
    assert all(_number(r["recall_at_10"]) for r in sections["needle"]["rows"] if r["bench"] == "needle")
    for row in sections["hooks"]["rows"]:          # every turn a hook appended landed, and no more
        assert row["events_after"] == row["events_expected"] and row["hook_failures_logged"] == 0
    assert all(_number(r["median_ms"]) and _number(r["vs_full_read"])
               for r in sections["context"]["rows"] if r["bench"] == "context")

    # Every measured section has a headline figure with its in-run peer and a ratio.
    assert {h["section"] for h in report["headline"]} == set(sections)
    assert all(_number(h["value"]) and _number(h["peer_value"]) and _number(h["ratio"]) for h in report["headline"])

    text = md.read_text()
    for name, title in TITLES.items():
        assert f"## {title}" in text, name
    assert "Skipped: LoCoMo dev not found" in text
    assert "None" not in text and "nan" not in text.lower().split()
    assert f"command: `trace bench all --quick --shared {shared_without_locomo}" in text


def test_without_any_shared_data_the_sections_that_need_it_skip_and_the_json_goes_to_the_file(tmp_path):
    out = tmp_path / "bench.json"
    run = cli("bench", "all", "--quick", "--only", "locomo,sweep", "--shared", str(tmp_path / "absent"),
              "--json-out", str(out))
    assert run.code == 0, run.err
    assert run.out == ""                            # the report went to --json-out
    sections = {s["name"]: s for s in json.loads(out.read_text())["sections"]}
    assert set(sections) == {"locomo", "sweep"}
    assert all(s["status"] == "skipped" for s in sections.values())
    assert "transcripts" in sections["sweep"]["reason"] and "locomo-dev" in sections["locomo"]["reason"]


def test_sizes_take_k_and_m_and_a_bad_section_is_a_usage_error(tmp_path):
    from trace_cli.commands.bench import _numbers
    assert _numbers("--sizes", "10k, 100K,1M,2500") == [10_000, 100_000, 1_000_000, 2_500]
    assert cli("bench", "all", "--sizes", "10x").code == 2
    bad = cli("bench", "all", "--only", "ingest,nonsense")
    assert bad.code == 2 and "nonsense" in bad.err
