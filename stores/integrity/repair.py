"""`trace verify --repair`: put the store back in working order from what
is still true.

  * derived files verify found damaged (state.db, the indexes, cache
    files) are removed and rebuilt from the log;
  * a log that lost events (a segment deleted, its tail cut, lines
    removed) gets a loss record naming the missing seqs, appended at its
    end: verify then reports the loss as acknowledged instead of failing,
    the seqs are never used again, and writers append again;
  * a log changed in other ways (a line altered) is accepted as it is, so
    writers append again, but verify keeps naming the altered line (exit
    5): the log is append-only and that line is ground truth now damaged:
    only a backup brings it back.

Nothing in segments/ or artifacts/ is ever rewritten or removed."""
from __future__ import annotations

from dataclasses import dataclass, field

from stores.verify import VerifyReport, verify


@dataclass
class RepairResult:
    before: VerifyReport
    after: VerifyReport
    repaired: list[str] = field(default_factory=list)


def repair(store, wait: float = 0.0) -> RepairResult:
    before = verify(store)
    if before.ok and not store.exists():
        store.require()                   # (a store whose segments/ was removed is repaired: the loss recorded)
    repaired = [f"rebuilt {d.where} ({d.why})" for d in before.damage]
    unlisted = [p for p in before.derived if not any(p.segment == d.where for d in before.damage)]
    rebuild_fulltext = any(p.segment.startswith("fulltext") for p in unlisted)
    repaired += [f"rebuilt {p.segment} ({p.problem.split(';')[0]})" for p in unlisted]
    repaired += [f"recorded the loss of events {a}..{b} in the log" for a, b in before.lost]
    with store.writer(wait=wait, embed=True, accept_changed_log=True, discard_first=before.damage,
                      lost=before.lost, rebuild_fulltext=rebuild_fulltext):
        pass
    return RepairResult(before, verify(store), repaired)
