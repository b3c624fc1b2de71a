"""On a terminal, anatomy commands print tables (and replay a utilisation
sparkline) instead of JSON Lines."""
from __future__ import annotations

from tests.helpers import cli
from tests.test_anatomy_replay import compact, render, session  # noqa: F401  (the fixture)
from trace_cli import output


def as_terminal(monkeypatch) -> None:
    real = output.Output.__init__

    def init(self, json_mode: bool = False, quiet: bool = False):
        real(self, json_mode, quiet)
        self.json = json_mode                         # as if stdout were a terminal
    monkeypatch.setattr(output.Output, "__init__", init)


def test_replay_turn_and_diff_print_tables(session, monkeypatch):  # noqa: F811
    render(session)
    compact(session, 450)
    render(session)
    as_terminal(monkeypatch)
    timeline = cli("anatomy", "replay", "--session", session)
    assert timeline.code == 0
    first = timeline.out.splitlines()[0]
    assert first.startswith("utilisation  ") and any(c in first for c in "▁▂▃▄▅▆▇█")
    assert "⟲" in timeline.out                          # the compaction between the renders
    assert all(len(line) <= 80 for line in timeline.out.splitlines())
    shown = cli("anatomy", "replay", "--session", session, "--turn", "2")
    assert shown.code == 0 and "A.4 field" in shown.out and "(marker)" in shown.out
    changed = cli("anatomy", "diff", "--session", session, "1", "2")
    assert changed.code == 0 and "evicted → marker" in changed.out
    assert "calls 1 → 2:" in changed.out
