"""Where the resident server listens: one socket per user and per
installation, in a directory only the user can enter. Kept light: the
client reads it before anything else is imported."""
from __future__ import annotations

import os
import stat
import sys
import zlib


def socket_path() -> str:
    """$XDG_RUNTIME_DIR/trace/serve-<install>.sock, else
    /tmp/trace-<uid>/serve-<install>.sock; <install> tells two virtual
    environments (or checkouts) apart, so a server never runs another
    installation's code."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    directory = os.path.join(runtime, "trace") if runtime else f"/tmp/trace-{os.getuid()}"
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tag = zlib.crc32(f"{sys.prefix}\0{package_root}".encode("utf-8", "surrogateescape"))
    return os.path.join(directory, f"serve-{tag:08x}.sock")


def private_directory(path: str, *, create: bool) -> bool:
    """True when the socket's directory is a real directory of this user
    that no one else may enter (made so when `create`). Anything else, and
    neither side uses it: another user could stand a socket there."""
    directory = os.path.dirname(path)
    if create:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError:
            return False
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077 == 0
