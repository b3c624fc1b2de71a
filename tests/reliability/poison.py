"""Poison for the reliability tests: event lines with a wrong-typed field
(each a different way to break the event schema), and a store holding
such lines as an older version, which did not check them, wrote them."""
from __future__ import annotations

from pathlib import Path

# (field, wrong value): each breaks the schema of a `trace` event a different way
WRONG_FIELDS = [
    ("tokens", "x"), ("tokens", -3), ("tokens", 1.5), ("tokens", True),
    ("tool", 5), ("tool", ["sh"]), ("tool", {"name": 5}), ("tool", {"name": "sh", "is_error": "yes"}),
    ("ts", 5), ("ts", {"at": 1}),
    ("session_id", 5), ("session_id", ""), ("session_id", {"a": 1}), ("session_id", None),
    ("turn_id", [1]), ("kind", "weird"), ("kind", 3), ("text", 9), ("text", None),
    ("meta", 5), ("meta", "m"), ("meta", {"attachments": 3}), ("meta", {"attachments": [{"id": "../x"}]}),
    ("source", 5), ("source", "s"), ("source", {"key": 5}), ("source", {"key": "k", "merged": "k2"}),
    ("source", {"key": "k", "line": "3"}),
    ("artifact", 7), ("artifact", {"id": "nothex"}), ("artifact", {"id": "a" * 64, "bytes": "9"}),
    ("artifact_content", 5), ("attachments_content", "blob"), ("attachments_content", [1, 2]),
    ("id", 5), ("id", ""), ("id", "x" * 500),
]


def trace_line(n: int, **fields) -> dict:
    """A well-formed `trace` event (what `trace export` writes), with `fields` replacing its own."""
    event = {"id": f"01J0000000000000000000{n:04d}", "seq": n, "hash": "0" * 64, "session_id": "poison-session",
             "turn_id": f"poison-session/t{n}", "ts": "2026-01-02T03:04:05.000Z", "kind": "user",
             "text": f"marmalade question number {n}", "tokens": 5,
             "source": {"format": "openai", "path": "x.jsonl", "line": n, "key": f"poison/{n}"}}
    event.update(fields)
    return event


def old_version_store(root: Path, extra_good: int = 3) -> list[tuple[str, object]]:
    """A store whose log holds, besides good events, one line per wrong
    field, written straight to the log as a version without the checks did.
    Returns the wrong fields in log order (after the good events)."""
    from stores.log.event_log import EventLog
    log = EventLog(root)
    good = [{"session_id": "good", "turn_id": f"good/t{i}", "ts": f"2026-01-01T00:00:0{i}.000Z", "kind": "user",
             "text": f"good marmalade event {i}", "tokens": 4, "source": {"key": f"good/{i}"}}
            for i in range(extra_good)]
    bad = []
    for i, (name, value) in enumerate(WRONG_FIELDS):
        if name in ("artifact_content", "attachments_content", "id"):
            continue                               # not fields of a logged event
        row = {"session_id": "old", "turn_id": "old/t", "ts": "2026-01-01T00:00:00.000Z", "kind": "user",
               "text": f"old marmalade row {i}", "tokens": 3, "source": {"key": f"old/{i}"}}
        row[name] = value
        bad.append((name, value))
        good.append(row)
    log.append(good)
    log.close()
    return bad
