"""LoCoMo dev (../shared/data/locomo-dev): the recall quality bar, measured
exactly as ../shared/tools/README.md says, through the real CLI."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO, SHARED

TOOLS = SHARED / "tools"
DATA = SHARED / "data" / "locomo-dev" / "locomo-dev.json"


@pytest.mark.shared
def test_locomo_dev_turn_level_recall_at_10_clears_the_bar(tmp_path):
    if not DATA.exists() or not TOOLS.is_dir():
        pytest.skip(f"LoCoMo dev set not found at {DATA}")
    env_python = sys.executable

    def run(*args, **kw):
        return subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=True, **kw)
    run("python3", str(TOOLS / "locomo_to_chat.py"), str(DATA), str(tmp_path / "lc"))
    store = str(tmp_path / "store")
    run(env_python, "-m", "trace_cli", "--store", store, "ingest", "--format", "openai",
        str(tmp_path / "lc" / "sessions.jsonl"))
    hits = run(env_python, "-m", "trace_cli", "--store", store, "recall", "--queries",
               str(tmp_path / "lc" / "questions.jsonl"), "-k", "10", "--json").stdout
    (tmp_path / "hits.jsonl").write_text(hits)
    score = subprocess.run(["python3", str(TOOLS / "score_locomo.py"), str(tmp_path / "lc" / "questions.jsonl"),
                            str(tmp_path / "hits.jsonl"), "10", "0.65"], capture_output=True, text=True)
    print(score.stdout)
    assert score.returncode == 0, score.stdout
