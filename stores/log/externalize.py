"""Text too large to keep inline in an event goes to the artifact store
(compressed, content-addressed); the event keeps a head/tail preview in its
place (reducers/truncate.middle_stub: `Total output lines: X`, a 50/50
split, `…N tokens truncated…`, and how to get the rest).

Two ways in: text already in memory, and text holding spilled strings (a
line too big to hold, stores/ingest/big_lines), which is redacted, counted and
stored as it streams, keeping only its first and last few hundred KB."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

from reducers.redact_stream import StreamRedactor
from reducers.tokens import count_tokens
from reducers.truncate import count_lines, middle_stub
from stores.log.artifacts import ArtifactStore
from stores.ingest.big_lines import SpillRegistry

PREVIEW_TOKENS = 500                  # the head/tail preview kept in the event
_EDGE_CHARS = 256 * 1024              # head/tail kept from a streamed artifact for its preview
_PREVIEWS = 1024                      # previews of recent artifacts kept (~2 KB each)


class Externalizer:
    def __init__(self, artifacts: ArtifactStore, spills: SpillRegistry | None, *, redact_secrets: bool):
        self.artifacts = artifacts
        self.spills = spills
        self.redact_secrets = redact_secrets
        # The preview of an output seen again (a file read twice) is known:
        # its artifact id is its content's hash.
        self._previews: OrderedDict[str, str] = OrderedDict()

    def text(self, full: str, preview: str | None = None) -> tuple[dict, str]:
        """(artifact reference, preview) for text in memory; `preview` is
        kept when the event already has one (an imported event's)."""
        artifact_id, size = self.artifacts.put(full.encode("utf-8", "surrogatepass"))
        total = count_tokens(full)
        if preview is None:
            preview = self._previews.get(artifact_id)
        if preview is None:
            preview = middle_stub(full, full, total_tokens=total, total_lines=count_lines(full),
                                  max_tokens=PREVIEW_TOKENS, hint=_hint(artifact_id))
            self._previews[artifact_id] = preview
            if len(self._previews) > _PREVIEWS:
                self._previews.popitem(last=False)
        return _reference(artifact_id, size, total), preview

    def stream(self, text: str) -> tuple[dict, str, int]:
        """(artifact reference, preview, secrets redacted) for a text
        holding spilled strings: streamed (redacted) into the artifact store,
        counting tokens and lines and keeping only its edges."""
        stats = _StreamStats()
        redactor = StreamRedactor() if self.redact_secrets else None

        def chunks() -> Iterator[bytes]:
            for piece in self.spills.split(text):
                texts = [piece] if isinstance(piece, str) else self.spills.iter_text(piece)
                for t in texts:
                    out = redactor.feed(t) if redactor else t
                    if out:
                        stats.add(out)
                        yield out.encode("utf-8", "surrogatepass")
            if redactor:
                rest = redactor.close()
                if rest:
                    stats.add(rest)
                    yield rest.encode("utf-8", "surrogatepass")

        artifact_id, size = self.artifacts.put_chunks(chunks())
        preview = middle_stub(stats.head, stats.tail, total_tokens=stats.tokens, total_lines=stats.total_lines,
                              max_tokens=PREVIEW_TOKENS, hint=_hint(artifact_id))
        return _reference(artifact_id, size, stats.tokens), preview, redactor.count if redactor else 0


def _reference(artifact_id: str, size: int, tokens: int) -> dict:
    """What the event keeps of its artifact (the id is the content's sha256)."""
    return {"id": artifact_id, "bytes": size, "tokens": tokens, "sha256": artifact_id}


def _hint(artifact_id: str) -> str:
    return f"trace show <this event> --full (artifact {artifact_id[:12]})"


class _StreamStats:
    """Token and line counts of a stream, plus its first and last few
    hundred KB (all a preview needs). Tokens are counted per chunk, so a
    token straddling two chunks may be counted twice: off by at most one
    per MB, on outputs of many MB."""

    def __init__(self):
        self.head = ""
        self.tail = ""
        self.tokens = 0
        self.lines = 0
        self._ends_with_newline = True

    def add(self, text: str) -> None:
        if len(self.head) < _EDGE_CHARS:
            self.head += text[: _EDGE_CHARS - len(self.head)]
        self.tail = (self.tail + text)[-_EDGE_CHARS:]
        self.tokens += count_tokens(text)
        self.lines += text.count("\n")
        self._ends_with_newline = text.endswith("\n")

    @property
    def total_lines(self) -> int:
        return self.lines + (0 if self._ends_with_newline else 1)
