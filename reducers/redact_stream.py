"""redact() for payloads too big to hold (a line spilled to disk streaming
into the artifact store): every quantifier of the rules is bounded, so
whether a rule matches at position i depends only on the text in
[i - CONTEXT, i + window). StreamRedactor emits everything whose fate is
already decided and holds back the last `window` characters; its output
equals redact() of the whole text for any chunking."""
from __future__ import annotations

from reducers.redact import CONTEXT, MAX_SECRET, rule_set

_BATCH_WINDOWS = 4              # scan when this many windows are waiting


class StreamRedactor:
    """redact() for payloads too big to hold: feed chunks, emit what is
    decided. Holds at most 4 windows (~1M chars at MAX_SECRET) plus one
    chunk. Concatenated outputs equal redact(whole text)[0] for any chunking."""

    def __init__(self, max_secret: int = MAX_SECRET):
        self._rules = rule_set(max_secret)
        self._chunks: list[str] = []
        self._pending = 0            # characters in _chunks
        self._buf = ""               # CONTEXT chars already emitted + undecided text
        self._emitted = 0            # how many leading chars of _buf are context only
        self.count = 0

    @property
    def held(self) -> int:
        """Characters held in memory (context + undecided + unscanned)."""
        return len(self._buf) + self._pending

    def feed(self, chunk: str) -> str:
        self._chunks.append(chunk)
        self._pending += len(chunk)
        window = self._rules.window
        # Batch: scan once 4 windows wait; the last window is scanned again next
        # time, so each char is scanned ~4/3 times.
        if len(self._buf) - self._emitted + self._pending < _BATCH_WINDOWS * window:
            return ""
        return self._advance(stop_margin=window)

    def close(self) -> str:
        out = self._advance(stop_margin=None)
        self._buf, self._emitted = "", 0
        return out

    def _advance(self, stop_margin: int | None) -> str:
        buf = self._buf + "".join(self._chunks)
        self._chunks, self._pending = [], 0
        # A match attempt that starts before `stop` sees only text inside buf, so
        # its outcome is final; later starts wait for more text.
        stop = len(buf) + 1 if stop_margin is None else len(buf) - stop_margin
        pieces, cut, n = self._rules.scan(buf, self._emitted, stop)
        self.count += n
        keep = max(cut - CONTEXT, 0)        # look-behinds need a little left context
        self._buf, self._emitted = buf[keep:], cut - keep
        return "".join(pieces)
