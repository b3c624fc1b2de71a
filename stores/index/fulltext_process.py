"""The full-text index, fed in a second process during a long ingest.

Parsing, redaction and the log keep one core busy; building the index's
documents and Tantivy's own thread need about as much again. In one
process they share one interpreter lock, so a long ingest hands full-text
indexing to a child process after its first `TRACE_INDEX_PROCESS_AFTER`
events (default 20,000; `never` keeps it in process). Each appended batch
goes to the child as the rows the index takes (stores/index/fulltext_documents.index_rows:
seq, location, session, kind, time, tool name, searchable text), which
cost the parent less than parsing the log lines again cost the child:

    parent -> child, one JSON line each:  {"add": [row, ...]}
                                          {"commit": seq}
    child -> parent, once, after commit:  {"ok": seq}  or  {"error": "..."}

The child inherits the store's writer lock (the same open file), so the
store stays locked until both processes are done. When the parent goes
away without a commit (killed, interrupted), the child sees end of input
and exits without committing: the index keeps its last commit and the
next writer catches it up from the log, as after any crash."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson

DEFAULT_AFTER = 20_000
PIPE_BYTES = 1 << 20


def handoff_after() -> int | None:
    """Events appended in process before indexing moves to a child (None: never)."""
    raw = os.environ.get("TRACE_INDEX_PROCESS_AFTER", "").strip().lower()
    if raw in ("never", "off", "no"):
        return None
    try:
        return max(int(raw), 0) if raw else DEFAULT_AFTER
    except ValueError:
        return DEFAULT_AFTER


class IndexerFailed(Exception):
    pass


class IndexerProcess:
    """The parent's handle on the child."""

    def __init__(self, store: Path, lock_fd: int | None):
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stores.index.fulltext_process", str(store)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            pass_fds=(lock_fd,) if lock_fd is not None else ())
        _widen_pipe(self.proc.stdin.fileno())

    def add(self, rows: list[list]) -> None:
        self._send({"add": rows})

    def commit(self, seq: int) -> None:
        """Wait for the child to index everything sent and commit it."""
        self._send({"commit": seq})
        self.proc.stdin.close()
        reply = self.proc.stdout.readline()
        code = self.proc.wait()
        try:
            answer = orjson.loads(reply) if reply else {}
        except orjson.JSONDecodeError:
            answer = {}
        if answer.get("ok") != seq:
            raise IndexerFailed(answer.get("error") or f"it exited with status {code} before committing")

    def abandon(self) -> None:
        """Stop the child without a commit (the writer is failing)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _send(self, msg: dict) -> None:
        try:
            data = orjson.dumps(msg, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:                  # a value JSON cannot hold exactly: as the log writes it
            from reducers.canonical import coerce
            data = orjson.dumps(coerce(msg), option=orjson.OPT_APPEND_NEWLINE)
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise IndexerFailed(self._last_words()) from None

    def _last_words(self) -> str:
        """Why the child stopped: its error reply, else its exit status."""
        try:
            answer = orjson.loads(self.proc.stdout.readline() or b"{}")
        except (orjson.JSONDecodeError, ValueError, OSError):
            answer = {}
        return answer.get("error") or f"it exited with status {self.proc.wait()}"


def _widen_pipe(fd: int) -> None:
    """A batch's rows are ~1 MB: a pipe that holds one lets the parent go on
    parsing while the child is still indexing the batch before (Linux)."""
    import fcntl
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except OSError:                        # above /proc/sys/fs/pipe-max-size: keep the default
        pass


# -- the child ------------------------------------------------------------------


def serve(store: Path, messages, reply) -> None:
    from stores.index.fulltext import FulltextIndex
    ft = FulltextIndex(store)
    for line in messages:
        msg = orjson.loads(line)
        if "add" in msg:
            ft.add(msg["add"])
        elif "commit" in msg:
            ft.commit(msg["commit"])
            ft.close()
            reply({"ok": msg["commit"]})
            return
    # End of input without a commit: the writer went away. Keep the last commit.


CHILD_NICENESS = 10


def _yield_to_parent() -> None:
    """Parsing in the parent is the ingest's critical path: with both
    processes runnable on two cores, the parent waited for its core about a
    fifth of the time while the indexer's two threads ran. At a lower
    priority the indexer takes the cores the parent leaves (1.74 -> 1.85
    cores busy over a 180k-event ingest) and catches up at commit."""
    try:
        os.nice(CHILD_NICENESS)
    except OSError:                 # not permitted here: index at the same priority
        pass


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the parent decides; Ctrl-C reaches it too
    _yield_to_parent()
    out = sys.stdout.buffer

    def reply(msg: dict) -> None:
        out.write(orjson.dumps(msg) + b"\n")
        out.flush()
    try:
        serve(Path(argv[0]), sys.stdin.buffer, reply)
    except Exception as exc:
        if os.environ.get("TRACE_DEBUG"):
            import traceback
            traceback.print_exc()
        reply({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
