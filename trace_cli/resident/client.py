"""The `trace` a script starts, when a resident server is running: it
hands the command over and waits for the exit code, forwarding the
signals it gets to the child that runs it. Whenever the server cannot
take the command before it starts, the command runs here instead, so a
missing, dead or outdated server costs a failed connect and nothing
else. Imports only what Python has loaded at start-up, plus socket."""
from __future__ import annotations

import os
import signal
import sys

from trace_cli.resident.address import private_directory, socket_path

_OFF = ("0", "no", "off", "false")
START_TIMEOUT_S = 10
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def command_name(argv: list[str]) -> str | None:
    """The command argv names, past the global options."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        i += 2 if argv[i] == "--store" else 1
    return argv[i] if i < len(argv) else None


def wanted(argv: list[str]) -> bool:
    """Whether to ask the server: never for `trace serve` itself, with
    TRACE_SERVE=0, or when stdin is a terminal (a child of the server is
    not in the terminal's foreground job, so it could not read it)."""
    if os.environ.get("TRACE_SERVE", "").strip().lower() in _OFF:
        return False
    if command_name(argv) in (None, "serve"):
        return False
    try:
        return not os.isatty(0)
    except OSError:
        return False


def run_resident(argv: list[str]) -> int | None:
    """The command's exit code when the server ran it; None when it is
    for this process to run."""
    if not wanted(argv) or not os.path.lexists(socket_path()):
        return None                                  # no server: spare the socket imports
    from trace_cli.resident import frames
    try:
        cwd = os.getcwd()
    except OSError:                                  # the directory is gone: let this process say so
        return None
    asked = _ask({"op": frames.RUN, "argv": list(argv), "cwd": cwd, "env": dict(os.environ)}, [0, 1, 2])
    if asked is None:
        return None
    sock, (tag, child) = asked
    if tag != frames.PID:
        sock.close()
        return None                                  # stale: run it here
    sock.settimeout(None)
    # A hook never breaks the agent (README): a worker lost mid-hook is a note, exit 0.
    return _wait(sock, child, lost=0 if command_name(argv) == "hooks" else 1)


def _ask(request: dict, fds: list[int]):
    """Send the server `request` (with `fds`): the open socket and the
    server's first reply frame, or None when no server took it. A server
    that has not answered within START_TIMEOUT_S is not used; a worker
    that finds the client gone never starts the command (it tells the
    client first)."""
    import socket
    from trace_cli.resident import frames
    path = socket_path()
    if not private_directory(path, create=False):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(START_TIMEOUT_S)
    try:
        sock.connect(path)
        frames.send_request(sock, request, fds)
        first = frames.read_frame(sock)
    except (OSError, ValueError):
        first = None
    if first is None:
        sock.close()
        return None
    return sock, first


def _wait(sock, child: int, lost: int) -> int:
    from trace_cli.resident import frames
    received: list[int] = []

    def forward(signum, _frame):
        received.append(signum)
        try:
            os.kill(child, signum)
        except OSError:
            pass

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    try:
        while True:
            try:
                reply = frames.read_frame(sock)
            except (OSError, ConnectionError):
                reply = None
            if reply is None:
                break
            if reply[0] == frames.CPU:
                _report(reply[1])
            elif reply[0] == frames.EXIT:
                return reply[1]
    finally:
        sock.close()
    if received:
        return 128 + received[-1]
    sys.stderr.write("trace: error: the resident server's worker ended without finishing the command "
                     "(run it again with TRACE_SERVE=0 to run it in its own process)\n")
    return lost


def _report(worker_cpu_us: int) -> None:
    """For benchmarks (TRACE_SERVE_REPORT=FILE): the worker's CPU time,
    which no rusage of the caller's can see, appended as a JSON line."""
    path = os.environ.get("TRACE_SERVE_REPORT")
    if path:
        try:
            with open(path, "a") as f:
                f.write('{"worker_cpu_ms": %.3f}\n' % (worker_cpu_us / 1000))
        except OSError:
            pass


def control(op: str) -> dict | None:
    """Ask the running server for its status, or to stop (`trace serve
    --status/--stop`): its status, or None when none is listening."""
    import marshal
    from trace_cli.resident import frames
    asked = _ask({"op": op}, [])
    if asked is None:
        return None
    sock, (tag, length) = asked
    try:
        return marshal.loads(frames.read_exactly(sock, length)) if tag == frames.INFO else None
    except (OSError, ValueError, EOFError):
        return None
    finally:
        sock.close()
