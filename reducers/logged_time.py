"""A time as the log holds it (ISO 8601, with or without a zone), read into
a datetime that compares with every other event's. Kept apart from
timestamps.py (inferring the times of drafts) so that readers of the log,
recall's among them, do not load the draft machinery to read a time."""
from __future__ import annotations

from datetime import datetime, timezone


def read_ts(text: str | None) -> datetime | None:
    """A logged timestamp as an aware datetime, None when unreadable. One
    without a zone (a hand-made `trace` line: "2026-01-01T00:00:00") is
    read as UTC, so it can be compared with every other event's."""
    if not text or not isinstance(text, str):
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)
