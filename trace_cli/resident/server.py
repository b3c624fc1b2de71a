"""The resident server's loop: warm once, then fork a child per command.

The server itself never runs a command and never opens a store, so each
child starts from the same clean state a fresh process would, with
TRACE's modules imported and tiktoken's encoder built. Before each fork
it checks that none of TRACE's source files changed since it started
(an upgrade or a checkout): if one did, it tells the client to run the
command itself and quits."""
from __future__ import annotations

import io
import os
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field

from trace_cli.resident import frames
from trace_cli.resident.address import private_directory, socket_path

_PEERCRED = struct.Struct("3i")
REQUEST_WAIT_S = 10           # a connection whose request has not come by then is dropped


class ServeError(Exception):
    """The server cannot start (message says why and what to do)."""


@dataclass
class Served:
    path: str
    pid: int = field(default_factory=os.getpid)
    started: float = field(default_factory=time.time)
    commands: int = 0
    stopped_because: str = ""

    def status(self) -> dict:
        return {"pid": self.pid, "socket": self.path, "started": self.started,
                "uptime_s": round(time.time() - self.started, 1), "commands": self.commands}


def warm() -> None:
    """Import what the commands import and build what every child would
    build: TRACE's modules (~190, not the benches), the commands, and the
    tokenizer. Nothing here opens a store or starts a thread."""
    import importlib
    import pkgutil
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # numpy's pool would be threads to fork past
    import reducers
    import stores
    import trace_cli
    for package in (reducers, stores, trace_cli):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not (module.name.endswith("__main__") or ".bench" in module.name):
                importlib.import_module(module.name)
    from trace_cli.app import prebuild
    prebuild()
    from reducers.tokens import encoding
    encoding()


def code_fingerprint() -> dict[str, tuple[int, int]]:
    """mtime and size of every TRACE source file loaded."""
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and name.split(".", 1)[0] in ("trace_cli", "stores", "reducers"):
            try:
                info = os.stat(path)
            except OSError:
                continue
            found[path] = (info.st_mtime_ns, info.st_size)
    return found


def serve(idle_s: float, on_ready=None) -> Served:
    """Listen until idle for `idle_s`, told to stop, SIGTERM'd, or
    outdated; returns why it stopped."""
    path = socket_path()
    if not private_directory(path, create=True):
        raise ServeError(f"{os.path.dirname(path)} is not a private directory of this user; remove it, or set "
                         f"XDG_RUNTIME_DIR to one")
    listener, inode = _listen(path)
    served = Served(path)
    try:
        warm()
        fingerprint = code_fingerprint()
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)          # children are reaped by the kernel
        signal.signal(signal.SIGTERM, _stop_on_signal)
        signal.signal(signal.SIGINT, _stop_on_signal)
        if on_ready:
            on_ready(served)
        try:
            _loop(listener, served, fingerprint, idle_s)
        except _Stop:
            served.stopped_because = "signalled"
    finally:
        _unlisten(listener, path, inode)
    return served


def _loop(listener: socket.socket, served: Served, fingerprint: dict, idle_s: float) -> None:
    """Accept connections and answer each once its whole request has come,
    reading every request as its bytes arrive: a client that connects and
    says nothing, or stops half-way through its request (stopped, or
    slow), waits alone until REQUEST_WAIT_S drops it, instead of holding
    up the next ones."""
    import selectors
    waiting: dict[socket.socket, tuple[float, frames.RequestReader]] = {}

    def drop(conn: socket.socket) -> None:
        selector.unregister(conn)
        waiting.pop(conn)[1].close()
        conn.close()

    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        last = time.monotonic()
        while not served.stopped_because:
            now = time.monotonic()
            if not waiting and now - last >= idle_s:
                served.stopped_because = f"idle for {idle_s:g} s"
                break
            due = min([last + idle_s] + [t + REQUEST_WAIT_S for t, _ in waiting.values()])
            for key, _ in selector.select(max(0.0, due - now)):
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    last = time.monotonic()
                    waiting[conn] = (last, frames.RequestReader())
                    selector.register(conn, selectors.EVENT_READ)
                    continue
                conn = key.fileobj
                try:
                    whole = waiting[conn][1].feed(conn)
                    if whole is None:
                        continue                        # the rest of the request is still to come
                    selector.unregister(conn)
                    del waiting[conn]
                    _answer(conn, listener, served, fingerprint, whole, others=list(waiting))
                except (OSError, ValueError, EOFError, TypeError) as exc:
                    if os.environ.get("TRACE_DEBUG"):   # one bad client: the next is served
                        sys.stderr.write(f"trace serve: a request failed: {exc!r}\n")
                    if conn in waiting:
                        drop(conn)
                        continue
                conn.close()
            for conn, (since, _) in list(waiting.items()):
                if time.monotonic() - since >= REQUEST_WAIT_S:
                    drop(conn)
        for conn in list(waiting):
            drop(conn)


class _Stop(BaseException):
    pass


def _stop_on_signal(_signum, _frame):
    raise _Stop()


def _listen(path: str) -> tuple[socket.socket, int]:
    if os.path.lexists(path):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)                                    # a dead server's socket
        else:
            raise ServeError(f"a server is already listening at {path} (`trace serve --stop` stops it)")
        finally:
            probe.close()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener, os.stat(path).st_ino


def _unlisten(listener: socket.socket, path: str, inode: int) -> None:
    """Close, and remove the socket file unless another server has put its own there since."""
    listener.close()
    try:
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass


def _answer(conn: socket.socket, listener: socket.socket, served: Served, fingerprint: dict,
            whole: tuple[dict, list[int]], others: list[socket.socket]) -> None:
    request, fds = whole
    op = request.get("op")
    try:
        pid, uid, gid = _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
        if uid != os.getuid():
            return
        conn.settimeout(REQUEST_WAIT_S)         # a reply to a client that stopped reading is not waited on for ever
        if op == frames.STATUS:
            _send_info(conn, served.status())
        elif op == frames.STOP:
            served.stopped_because = f"stopped by `trace serve --stop` (pid {pid})"
            _send_info(conn, served.status())
        elif op == frames.RUN and len(fds) == 3:
            if code_fingerprint() != fingerprint:
                served.stopped_because = "TRACE's code changed on disk"
                conn.sendall(frames.frame(frames.STALE, 0))
                return
            if os.fork() == 0:
                for other in others:                           # another client's: not the child's to hold open
                    other.close()
                _child(conn, listener, fds, request)           # never returns
            served.commands += 1
    finally:
        for fd in fds:
            os.close(fd)


def _send_info(conn: socket.socket, info: dict) -> None:
    import marshal
    body = marshal.dumps(info)
    conn.sendall(frames.frame(frames.INFO, len(body)) + body)


def _child(conn: socket.socket, listener: socket.socket, fds: list[int], request: dict) -> None:
    """Become the command's process: its streams, directory, environment
    and argv; run it; send the exit code; exit."""
    code = 1
    try:
        conn.settimeout(None)
        conn.sendall(frames.frame(frames.PID, os.getpid()))    # first: a client that gave up gets no command run
        listener.close()
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        fds.clear()
        _fresh_streams()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()                                           # the client's TZ, for local times
        _reseed()
        argv = [str(a) for a in request["argv"]]
        sys.argv = ["trace", *argv]
        _stop_when_client_leaves(conn)
        from trace_cli.app import main
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:                               # noqa: BLE001 - the child must always answer
        try:
            sys.stderr.write(f"trace: error: the resident server could not run the command ({exc}); "
                             f"run it with TRACE_SERVE=0\n")
        except Exception:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        used = os.times()
        conn.sendall(frames.frame(frames.CPU, int((used.user + used.system) * 1e6))
                     + frames.frame(frames.EXIT, code))
    finally:
        os._exit(code & 0xFF)


def _stop_when_client_leaves(conn: socket.socket) -> None:
    """A client killed outright (SIGKILL: nothing to forward) only closes
    its end of the connection, on which it never sends after the request.
    The command then gets the SIGTERM it would have had, so a `--follow`
    stops after a last pass instead of running on with no one to stop it."""
    import threading

    def watch() -> None:
        try:
            gone = conn.recv(1) == b""
        except OSError:
            gone = True
        if gone:
            os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=watch, name="client-watch", daemon=True).start()


def _fresh_streams() -> None:
    """sys.stdin/stdout/stderr over the client's descriptors, buffered as
    Python would for them (line-buffered on a terminal)."""
    encoding, errors = sys.stdout.encoding, sys.stdout.errors

    def text(fd: int, mode: str, errors: str) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        tty = raw.isatty()
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=tty and mode == "w",
                                write_through=fd == 2)

    sys.stdin = sys.__stdin__ = text(0, "r", errors)
    sys.stdout = sys.__stdout__ = text(1, "w", errors)
    sys.stderr = sys.__stderr__ = text(2, "w", "backslashreplace")


def _reseed() -> None:
    """Children of one parent share its random state: reseed what seeds."""
    if "random" in sys.modules:
        sys.modules["random"].seed()
