"""`trace ingest --follow` as a function: poll growing transcripts and feed
what they gain through the ordinary ingest (so dedupe keys, redaction and
the append chokepoint are the same as a one-shot run).

Each poll compares every followed file's (inode, size, mtime) with what it
was. A file that changed and then stayed still for `settle` seconds is
ingested; so is one that keeps changing, every `max_delay` seconds, so a
busy transcript never starves. Ingest reads the file afresh and adds only
what is new; an unfinished last line waits for the next pass ("pending"),
and so do the drafts at the end that may still merge with lines not yet
written (the blocks of a streamed message) until the file gains more or
has been still for HOLD_SECONDS: so the log ends with the events a one-shot
ingest of the finished file makes.

The source moving under us is survived:
- truncated (the size went down): ingested again from the top; lines
  already in the log are skipped by their keys;
- rotated (the path now names another inode): the old inode, still open
  here, is read to its end under its old name first, so lines written just
  before the rename are not lost, then the new file is followed.

A stop request (SIGINT/SIGTERM, `stop()`) is honoured between passes: the
current ingest finishes (its batch fsynced), one last pass takes in what
is complete, and the function returns."""
from __future__ import annotations

import os
import stat
import time
from itertools import groupby
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from stores.errors import StoreLocked
from stores.ingest.sources import COMPRESSED_SUFFIXES, TRANSCRIPT_SUFFIXES, Source
from stores.ingest.tree import walk_tree

POLL_SECONDS = 0.5
SETTLE_SECONDS = 1.0
MAX_DELAY_SECONDS = 10.0
HOLD_SECONDS = 10.0            # a message whose blocks stream in slower than this may end up split


@dataclass
class _Watched:
    path: Path
    source_id: str
    fd: int | None = None              # held open so a rotated-away inode can still be read
    inode: int | None = None
    size: int = -1
    mtime_ns: int = -1
    changed_at: float | None = None    # first change not yet ingested
    last_change: float = 0.0
    not_before: float = 0.0            # a held-back tail is read whole once the file has been still this long
    refused: str = ""                  # why it could not be opened, said once

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class FollowState:
    stop_requested: bool = False
    passes: int = 0
    watched: dict[str, _Watched] = field(default_factory=dict)
    retired: list[int] = field(default_factory=list)   # rotated-away inodes' fds, closed once read
    carried: list[Source] = field(default_factory=list)  # rotated-away files a locked pass could not read


class Follower:
    def __init__(self, store, paths: list[str], *, poll: float = POLL_SECONDS, settle: float = SETTLE_SECONDS,
                 max_delay: float = MAX_DELAY_SECONDS, ingest_options: dict | None = None,
                 note: Callable[[str], None] = lambda m: None, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.paths = paths
        self.poll = poll
        self.settle = settle
        self.max_delay = max_delay
        self.options = dict(ingest_options or {})
        self.note = note
        self.clock = clock
        self.state = FollowState()

    def stop(self) -> None:
        self.state.stop_requested = True

    # -- the loop ----------------------------------------------------------------

    def run(self, until: Callable[[], bool] | None = None) -> Iterator:
        """Ingest results as they happen, until stop() (or `until()` is true);
        then a final pass over everything that changed."""
        try:
            while not self.state.stop_requested and not (until and until()):
                yield from self._pass(final=False)
                self._sleep(self.poll)
            yield from self._pass(final=True)
        finally:
            for w in self.state.watched.values():
                w.close()
            self._close_retired()

    def _close_retired(self) -> None:
        while self.state.retired:
            os.close(self.state.retired.pop())

    def _sleep(self, seconds: float) -> None:
        end = self.clock() + seconds
        while not self.state.stop_requested:
            left = end - self.clock()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))

    def _pass(self, final: bool) -> Iterator:
        self.state.passes += 1
        now = self.clock()
        due, self.state.carried = self.state.carried, []
        listed = set()
        for path in self._files():
            listed.add(str(path))
            w = self.state.watched.get(str(path))
            if w is None:
                w = self.state.watched[str(path)] = _Watched(path, str(path.resolve()))
            due.extend(self._check(w, now, final))
        for key, w in list(self.state.watched.items()):
            if key in listed:
                continue
            if w.inode is not None:
                # Gone from a followed directory (deleted, renamed away): its open
                # inode may still hold lines no pass has read yet.
                due.extend(self._check(w, now, final))
            if w.fd is None:
                del self.state.watched[key]
        if due:
            # A file still within HOLD_SECONDS of its last change may be in the
            # middle of a streamed message: its open tail waits (not on the last pass).
            left = set()
            holding = lambda src: not final and now - self._last_change(src) < HOLD_SECONDS
            try:
                # in order (a rotated-away file before its successor), one ingest per run of the same kind
                for held, group in groupby(due, key=holding):
                    for result in self.store.ingest(list(group), hold_open_tail=held, **self.options):
                        if held and result.pending:
                            left.add(result.source)
                        yield result
            except StoreLocked:
                # Another writer (a hook, cron): these files stay due for the next pass.
                self.note("another writer holds the store; trying again on the next poll")
                self.state.carried = [src for src in due if src.path.parent == Path("/proc/self/fd")]
                for src in due:
                    w = self.state.watched.get(src.display)
                    if w is not None:
                        w.changed_at = w.changed_at or now
                        w.size = -1
                return
            self._close_retired()
            for src in due:
                w = self.state.watched.get(src.display)
                if w is not None and src.path == w.path:
                    if src.display in left:            # its open tail waits: look again once it has been still
                        w.not_before = w.last_change + HOLD_SECONDS
                    else:
                        w.changed_at = None

    def _last_change(self, src: Source) -> float:
        w = self.state.watched.get(src.display)
        return w.last_change if w is not None and src.path == w.path else 0.0

    def _files(self) -> list[Path]:
        out = []
        for arg in self.paths:
            p = Path(arg).expanduser()
            if p.is_dir():
                for root, files in walk_tree(p):     # links to directories too, each real one once
                    out.extend(Path(root) / n for n in files
                               if n.endswith(TRANSCRIPT_SUFFIXES) and not n.startswith("."))
            else:
                out.append(p)        # a file, or one not there yet: followed once it appears
        return out

    def _check(self, w: _Watched, now: float, final: bool) -> list[Source]:
        """The sources of `w` due for ingest now."""
        due = []
        try:
            st = os.stat(w.path)
        except OSError:                # gone, or its directory is no longer ours to enter
            st = None
        if w.inode is not None and (st is None or st.st_ino != w.inode):
            # Rotated (or removed): read the old inode to its end under its own name.
            if w.fd is not None:
                due.append(Source(str(w.path), Path(f"/proc/self/fd/{w.fd}"), w.source_id,
                                  compressed=w.path.name.endswith(COMPRESSED_SUFFIXES)))
                self.note(f"{w.path}: rotated; reading the rest of the old file first")
                self.state.retired.append(w.fd)
                w.fd = None
            w.inode, w.size, w.mtime_ns, w.changed_at = None, -1, -1, None
            if due:
                return due + self._check(w, now, final)
        if st is None:
            return due
        if not stat.S_ISREG(st.st_mode):
            return due                         # a FIFO or a device: opening it could wait forever
        if w.inode is None:
            try:
                # O_NONBLOCK: should a FIFO take the name between the stat and here, the open does not wait
                w.fd = os.open(w.path, os.O_RDONLY | os.O_NONBLOCK)
                w.inode = os.fstat(w.fd).st_ino
            except OSError as exc:
                if exc.strerror != w.refused:  # not silently forever: it is looked at again each poll
                    w.refused = exc.strerror or str(exc)
                    self.note(f"{w.path}: cannot read it ({w.refused}); followed once it can be read")
                return due
            w.refused = ""
        if st.st_size != w.size or st.st_mtime_ns != w.mtime_ns:
            if 0 <= st.st_size < w.size:
                self.note(f"{w.path}: truncated; reading it again from the top (lines already logged are skipped)")
            w.size, w.mtime_ns, w.last_change = st.st_size, st.st_mtime_ns, now
            w.changed_at = w.changed_at or now
            w.not_before = 0.0                 # new lines: a held tail may be closed now
        if w.changed_at is not None and st.st_size > 0:
            quiet = now - w.last_change >= self.settle and now >= w.not_before
            overdue = now - w.changed_at >= self.max_delay and now >= w.not_before
            if final or quiet or overdue:
                due.append(Source(str(w.path), w.path, w.source_id,
                                  compressed=w.path.name.endswith(COMPRESSED_SUFFIXES)))
        return due
