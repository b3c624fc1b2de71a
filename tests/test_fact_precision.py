"""Precision of the rule-based extractor on the shared real transcripts,
against a sample labelled by hand (tests/fixtures/fact_labels.jsonl: 88
facts the extractor found in ../shared/transcripts, each judged: is it a
settled fact, does its key name what it is about, is its value right).

The labels were made on the extractor as it was first run; some wrong
facts it found then are no longer found. Precision here is over the
labelled facts it still finds, so a change that brings a wrong one back,
or loses right ones, shows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from reducers.fact_sources import FactExtractor
from stores.store import Store

LABELS = Path(__file__).parent / "fixtures" / "fact_labels.jsonl"


@pytest.mark.shared
def test_labelled_facts_from_real_transcripts_stay_precise(tmp_path, shared_transcripts):
    store = Store(tmp_path / "store")
    list(store.ingest([str(shared_transcripts)], embed=False))
    extractor = FactExtractor()
    found = set()
    total = 0
    for event in store.events():
        for f in extractor.facts(event):
            total += 1
            found.add((f.rule, f.key, f.value))
    labels = [json.loads(line) for line in LABELS.read_text().splitlines()]
    assert len(labels) >= 50
    still = [x for x in labels if (x["rule"], x["key"], x["value"]) in found]
    right = [x for x in still if x["fact"] and x["key_ok"] and x["value_ok"]]
    key_ok = [x for x in still if x["fact"] and x["key_ok"]]
    value_ok = [x for x in still if x["fact"] and x["value_ok"]]
    correct_then = [x for x in labels if x["fact"] and x["key_ok"] and x["value_ok"]]
    print(f"{total} candidates, {len(found)} distinct facts; {len(still)}/{len(labels)} labelled ones still found; "
          f"precision {len(right) / len(still):.3f} (keys {len(key_ok) / len(still):.3f}, "
          f"values {len(value_ok) / len(still):.3f})")
    assert len(right) / len(still) >= 0.75
    assert len(value_ok) / len(still) >= 0.85
    # right answers are not lost to make the score (at most two)
    lost = [x for x in correct_then if (x["rule"], x["key"], x["value"]) not in found]
    assert len(lost) <= 2, lost
