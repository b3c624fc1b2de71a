"""The wire between client and server: a request is a length and a
marshalled dict (the same Python on both ends: the socket's name holds the
installation), sent with the client's stdin, stdout and stderr as file
descriptors; replies are 5-byte frames, a tag and a signed 32-bit number."""
from __future__ import annotations

import marshal
import socket
import struct

RUN, STOP, STATUS = "run", "stop", "status"
PID = b"P"            # the child that runs the command (the client forwards signals to it)
CPU = b"C"            # the worker's CPU time in microseconds, just before EXIT
EXIT = b"X"           # the command's exit code: the last frame
STALE = b"S"          # the server's code changed on disk: run the command in the client's own process
INFO = b"I"           # a marshalled dict follows, of the length given (status)
_FRAME = struct.Struct(">ci")
_LENGTH = struct.Struct(">I")
MAX_REQUEST = 16 << 20


def frame(tag: bytes, number: int) -> bytes:
    return _FRAME.pack(tag, number)


def send_request(sock: socket.socket, request: dict, fds: list[int]) -> None:
    body = marshal.dumps(request)
    data = _LENGTH.pack(len(body)) + body
    sent = socket.send_fds(sock, [data], fds) if fds else sock.send(data)
    if sent < len(data):              # (an empty send after the server has answered and closed would fail)
        sock.sendall(data[sent:])


class RequestReader:
    """A request read as its bytes come, for a server that must not wait
    on one client: `feed` takes what the socket has now (never blocking)
    and returns the request and its descriptors once whole, else None.
    Descriptors come with the first bytes; they are the reader's to close
    until the request is returned."""

    def __init__(self) -> None:
        self.data = b""
        self.fds: list[int] = []

    def feed(self, sock: socket.socket) -> tuple[dict, list[int]] | None:
        data, fds, _, _ = socket.recv_fds(sock, 65536, 3)     # (a client sends nothing after its request)
        self.fds += fds
        if not data:
            raise ConnectionError("the other side closed mid-request")
        self.data += data
        if len(self.data) < _LENGTH.size or len(self.data) < self._length():
            return None
        request = marshal.loads(self.data[_LENGTH.size:self._length()])
        if not isinstance(request, dict):
            raise ValueError("not a request")
        fds, self.fds = self.fds, []
        return request, fds

    def _length(self) -> int:
        (length,) = _LENGTH.unpack_from(self.data)
        if length > MAX_REQUEST:
            raise ValueError("request too large")
        return _LENGTH.size + length

    def close(self) -> None:
        for fd in self.fds:
            _close(fd)
        self.fds = []


def read_frame(sock: socket.socket) -> tuple[bytes, int] | None:
    """The next reply frame, or None when the other side closed."""
    data = read_exactly(sock, _FRAME.size, eof_ok=True)
    return _FRAME.unpack(data) if data else None


def read_exactly(sock: socket.socket, n: int, eof_ok: bool = False) -> bytes:
    """n bytes (b"" when `eof_ok` and the other side closed before any)."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            if eof_ok and got == 0:
                return b""
            raise ConnectionError("the other side closed mid-message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _close(fd: int) -> None:
    import os
    try:
        os.close(fd)
    except OSError:
        pass
