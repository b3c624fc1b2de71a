"""`WHERE column IN (…)` over any number of values: SQLite caps the bound
parameters of one statement, so the values go in chunks."""
from __future__ import annotations

import sqlite3
from typing import Iterable, Iterator

CHUNK = 500


def select_in(db: sqlite3.Connection, query: str, values: Iterable) -> Iterator[tuple]:
    """Rows of `query`, whose `{}` is the IN list, for all `values` (each once)."""
    values = list(dict.fromkeys(values))
    for i in range(0, len(values), CHUNK):
        chunk = values[i:i + CHUNK]
        yield from db.execute(query.format(",".join("?" * len(chunk))), chunk)
