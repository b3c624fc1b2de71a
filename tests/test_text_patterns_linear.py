"""The patterns that trim facts, split clauses and clean marker topics run on
whatever text a session holds: a long run of one character (a padded table's
whitespace, a base64 blob, a row of backslashes) must cost time in proportion
to its length. A pattern tried at every character of such a run and scanning
to its end each time is quadratic: 5,000 tabs took 10 s in one of them."""
import time

import pytest

from reducers import fact_builders, fact_keys, fact_rules, fact_shapes, fact_sources, markers, prose
from reducers.anatomy import topics

PATTERNS = {
    "fact value end": fact_shapes.VALUE_END, "fact auxiliary tail": fact_builders.AUXILIARY,
    "fact clause end": fact_builders._CLAUSE_END, "fact sentence end": fact_builders._SENTENCE_END,
    "fact lead-in": fact_shapes.LEAD_IN, "fact label": fact_rules._LABEL, "fact key context": fact_keys._CONTEXT,
    "fact key owner": fact_keys._OWNED, "prose sentences": prose._SPLIT, "fact question tail": fact_sources._QUESTION_TAIL,
    "fact key trailing noun": fact_keys._TRAILING, "fact key 'with id'": fact_keys._WITH_ID,
    "prose clauses": prose._CLAUSE, "marker escapes": markers._ESCAPE, "marker shell prompt": markers._PROMPT,
    "topic non-prose": topics._NOT_PROSE,
}
RUNS = {"tabs": "\t" * 8000, "spaces then a word": " " * 8000 + "x", "letters": "a" * 8000,
        "backslashes": "\\" * 8000, "dotted": "a." * 4000, "hyphenated": "a-" * 4000, "CJK": "中" * 8000}


def _cpu(pattern, text: str) -> float:
    start = time.process_time()
    pattern.sub(" ", text)
    pattern.split(text)
    return time.process_time() - start


@pytest.mark.parametrize("name", PATTERNS)
def test_a_long_run_costs_time_in_proportion_to_its_length(name):
    pattern = PATTERNS[name]
    for run in RUNS.values():
        quarter = min(_cpu(pattern, run[: len(run) // 4]) for _ in range(3))
        assert _cpu(pattern, run) < 8 * quarter + 0.02, (name, run[:4])


def test_the_patterns_still_find_what_they_trim():
    assert fact_shapes.VALUE_END.sub("", "dark mode   because my eyes hurt") == "dark mode"
    assert prose._CLAUSE.split("fix the test, and deploy; then rest") == ["fix the test", "deploy", "then rest"]
    assert markers._PROMPT.sub(" ", "alice@laptop:~$ ls") == " ~$ ls"
    assert markers._ESCAPE.sub(" ", "a\\\\nb") == "a b"
    assert fact_keys._WITH_ID.sub(" ", "the order  with ID 42") == "the order 42"
