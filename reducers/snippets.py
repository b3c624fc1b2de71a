"""Snippets: the part of a hit's text that shows why it matched."""
from __future__ import annotations

import re

WIDTH = 240


def snippet(text: str, terms: list[str], width: int = WIDTH) -> str:
    """A window of about `width` characters around the first match of the
    first term found (terms come most telling first, e.g. rarest first;
    case-insensitive), cut at word boundaries, with … where cut."""
    if len(text) <= width:
        return text.strip()
    low = text.lower()
    center = next((i for i in (low.find(t.lower()) for t in terms if t) if i >= 0), 0)
    start = max(center - width // 3, 0)
    end = min(start + width, len(text))
    start = max(end - width, 0)
    if start > 0:
        m = re.search(r"\s", text[start:start + 30])
        start = start + m.end() if m else start
    if end < len(text):
        m = re.search(r"\s\S*$", text[max(end - 30, start):end])
        end = max(end - 30, start) + m.start() if m else end
    body = " ".join(text[start:end].split())
    return f"{'…' if start > 0 else ''}{body}{'…' if end < len(text) else ''}"
