"""Progress on stderr for long ingests and sweeps, only when stderr is a
terminal (cron logs and pipes stay clean)."""
from __future__ import annotations

from trace_cli.output import Output


class IngestProgress:
    def __init__(self, out: Output):
        self.out = out
        self._progress = None
        self._task = None
        self._events = 0

    def __enter__(self):
        if self.out.stderr_is_tty() and not self.out.quiet:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False),   # a file name is not markup
                                      TextColumn("{task.fields[events]} records"), TimeElapsedColumn(),
                                      console=self.out.err_console, transient=True)
            self._progress.start()
            self._task = self._progress.add_task("ingesting", events=0)
        return self

    def update(self, source: str, records: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=f"ingesting {source}", events=self._events + records)

    def done(self, result) -> None:
        self._events += result.added + result.skipped

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()


class SweepProgress:
    """A bar over the events a sweep reads (stderr, terminals only)."""

    def __init__(self, out: Output):
        self.out = out
        self._progress = None
        self._task = None

    def __enter__(self):
        if self.out.stderr_is_tty() and not self.out.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
            self._progress = Progress(BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=self.out.err_console, transient=True)
            self._progress.start()
            self._task = self._progress.add_task("sweeping", total=None)
        return self

    def update(self, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
