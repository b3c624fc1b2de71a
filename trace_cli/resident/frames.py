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


def receive_request(sock: socket.socket) -> tuple[dict, list[int]]:
    """The request and the file descriptors that came with it."""
    data, fds, _, _ = socket.recv_fds(sock, 65536, 3)
    try:
        if len(data) < _LENGTH.size:
            data += read_exactly(sock, _LENGTH.size - len(data))
        (length,) = _LENGTH.unpack_from(data)
        if length > MAX_REQUEST:
            raise ValueError("request too large")
        body = data[_LENGTH.size:]
        if len(body) < length:
            body += read_exactly(sock, length - len(body))
        request = marshal.loads(body)
        if not isinstance(request, dict):
            raise ValueError("not a request")
        return request, fds
    except BaseException:
        for fd in fds:
            _close(fd)
        raise


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
