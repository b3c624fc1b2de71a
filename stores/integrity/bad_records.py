"""The records of one source on their way to its parser, and its bad
lines on their way to the user: each bad line is reported once as
`file:line: reason` and counted, even when the parse is restarted after a
record the parser failed on (stores/ingest/run.py reads the file again
without that record, so one bad record costs only itself)."""
from __future__ import annotations

from stores.ingest.sources import SourceError

MAX_PARSER_RESTARTS = 100          # records a parser may fail on in one file before the file is given up


class BadLines:
    """Reports a source's bad lines as `file:line: reason`, each once (a
    parse restarted after a record it failed on meets the same lines again)."""

    def __init__(self, result, display: str, report, final: bool = False):
        self.result, self.display, self.report = result, display, report
        self.final = final          # stdin: no later run will find the rest of a line
        self._said: set[tuple[int, str]] = set()
        self.ignored = 0            # lines read and left out by design (a command's text before its document)

    def bad(self, line, reason: str) -> None:
        key = (line, reason)
        if key in self._said:
            return
        if len(self._said) < 100_000:
            self._said.add(key)
        bad_line(self.result, self.display, line, reason, self.report)

    def preamble(self, line: int, reason: str) -> None:
        if (line, reason) in self._said:
            return
        self._said.add((line, reason))
        self.ignored += 1
        if self.report:
            self.report(f"{self.display}:{line}: {reason}")

    def pending(self, line: int, reason: str) -> None:
        if self.final:
            self.bad(line, "the input ended inside this line (cut short): it was not ingested")
            return
        if (line, reason) in self._said:
            return
        self._said.add((line, reason))
        self.result.pending += 1
        if self.report:
            self.report(f"{self.display}:{line}: {reason}")


class RecordFeed:
    """The records a parser reads, minus the lines it failed on before;
    remembers the line it handed out last."""

    def __init__(self, records, said: BadLines, without: set[int]):
        self._records, self._said, self._without = records, said, without
        self.line: int | None = None

    def __iter__(self):
        for rec in self._records:
            if isinstance(rec, SourceError):
                if rec.preamble:
                    self._said.preamble(rec.line, rec.reason)
                elif rec.pending:
                    self._said.pending(rec.line, rec.reason)
                else:
                    self._said.bad(rec.line, rec.reason)
                continue
            if rec[0] in self._without:
                continue
            self.line = rec[0]
            yield rec


def bad_line(result, display: str, line: int, reason: str, report) -> None:
    """Count a bad line in `result` (an IngestResult) and report it."""
    result.errors += 1
    msg = f"{display}:{line}: {reason}"
    if len(result.error_lines) < 1000:
        result.error_lines.append(msg)
    if report:
        report(msg)
