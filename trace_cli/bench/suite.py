"""What `trace bench all` runs: the plan (sizes, repeats; full or --quick)
and one function per section, each a call into the bench module that also
backs its own `trace bench …` command. A section that cannot run here
(no shared transcripts, no LoCoMo set) raises `Skip` with the reason."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from trace_cli.bench.corpus import REPO

Note = Callable[[str], None]


class Skip(Exception):
    """This section cannot run on this machine; the message says why."""


def default_shared() -> Path:
    return Path(os.environ.get("TRACE_SHARED") or REPO.parent / "shared")


@dataclass
class Plan:
    sizes: list[int]                       # recall store sizes; the largest is also the ingest size
    repeat: int                            # runs per measured phase (median)
    shared: str                            # ../shared: transcripts for ingest/sweep, LoCoMo dev
    quick: bool = False
    workdir: str | None = None
    context_sizes: list[int] = field(default_factory=lambda: [1_000, 10_000, 100_000, 250_000])
    context_repeat: int = 7
    sweep_events: int = 100_000
    needle_scaling: list[int] = field(default_factory=lambda: [100, 200, 1_000, 10_000, 100_000])
    hooks_events: int = 10_000
    hooks_session_events: list[int] = field(default_factory=lambda: [500, 10_000])
    hooks_runs: int = 30
    startup_events: int = 10_000
    startup_runs: int = 10
    recall_cold_runs: int = 5

    @classmethod
    def full(cls, sizes: list[int], repeat: int, shared: Path, workdir: str | None = None) -> "Plan":
        return cls(sizes=sizes, repeat=repeat, shared=str(shared), workdir=workdir)

    @classmethod
    def smoke(cls, shared: Path, sizes: list[int] | None = None, workdir: str | None = None) -> "Plan":
        """--quick: every section on tiny inputs, one run each (a smoke test,
        not a measurement)."""
        return cls(sizes=sizes or [500], repeat=1, shared=str(shared), quick=True, workdir=workdir,
                   context_sizes=[200], context_repeat=1, sweep_events=1_000,
                   needle_scaling=[100, 200], hooks_events=100, hooks_session_events=[40],
                   hooks_runs=1, startup_events=200, startup_runs=1, recall_cold_runs=1)

    def as_json(self) -> dict:
        return asdict(self)

    @property
    def ingest_events(self) -> int:
        return max(max(self.sizes), 1_000)


def _corpus(plan: Plan) -> str:
    path = Path(plan.shared) / "transcripts"
    if not path.is_dir():
        raise Skip(f"real transcripts not found at {path} (clone ../shared beside the repo or pass --shared DIR)")
    return str(path)


def _ingest(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.ingest_bench import run_ingest_bench
    return run_ingest_bench(plan.ingest_events, _corpus(plan), plan.workdir, plan.repeat, note)


def _recall(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.recall_bench import run_recall_bench
    return run_recall_bench(sorted(plan.sizes), plan.workdir, note, cold_runs=plan.recall_cold_runs)


def _needle(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.needle_bench import run_needle_bench
    return run_needle_bench(note, plan.workdir, scaling=plan.needle_scaling)


def _locomo(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.locomo_bench import locomo_inputs, run_locomo_bench
    found = locomo_inputs(Path(plan.shared))
    if isinstance(found, str):
        raise Skip(found)
    return run_locomo_bench(Path(plan.shared), plan.repeat, note, quick=plan.quick, workdir=plan.workdir)


def _startup(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.startup_bench import run_startup_bench
    return run_startup_bench(plan.startup_events, plan.startup_runs, note, plan.workdir)


def _context(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.context_bench import run_context_bench
    workdir = str(Path(plan.workdir) / "context") if plan.workdir else None
    return run_context_bench(plan.context_sizes, note, workdir, plan.context_repeat)


def _sweep(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.sweep_bench import run_sweep_bench
    # The same workdir as ingest: the corpus replicas it wrote are reused.
    return run_sweep_bench(plan.sweep_events, _corpus(plan), plan.workdir, plan.repeat, note)


def _redact(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.redact_bench import run_redact_bench
    return run_redact_bench(_corpus(plan), plan.repeat, note)


def _hooks(plan: Plan, note: Note) -> list[dict]:
    from trace_cli.bench.hooks_bench import run_hooks_bench
    return run_hooks_bench(plan.hooks_events, plan.hooks_session_events, plan.hooks_runs, plan.workdir, note)


# In running order: cold start first, before the run has filled the page cache;
# the two that grow with --sizes last, so a run stopped early keeps the rest.
SECTIONS: dict[str, Callable[[Plan, Note], list[dict]]] = {
    "cold_start": _startup, "needle": _needle, "locomo": _locomo, "context": _context, "sweep": _sweep,
    "redact": _redact, "hooks": _hooks, "recall": _recall, "ingest": _ingest,
}

TITLES = {
    "cold_start": "Cold start", "ingest": "Ingest vs SQLite and SQLite FTS5",
    "recall": "Recall vs grep -F / ripgrep and SQLite FTS5", "needle": "Needle protocol (paper 10.4)",
    "locomo": "LoCoMo dev", "context": "Context assembly (`trace context`)", "sweep": "Nightly sweep",
    "redact": "Redaction", "hooks": "Stop hook",
}
