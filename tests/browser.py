"""Headless Chromium for the HTML report's test and `make report`: find it,
install it when absent (the Debian package `chromium`, as root, the way CI
runs `make test` on a fresh machine), take a screenshot, read it back.

Chromium runs offline and leaves nothing behind: no sandbox (root in
CI), no GPU, no background networking, updates or sync, a fresh profile
in a temporary directory."""
from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--force-device-scale-factor=1", "--disable-extensions", "--mute-audio")
INSTALL_TIMEOUT = 900
_LOCK = Path(tempfile.gettempdir()) / "trace-chromium-install.lock"


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def ensure_chromium() -> tuple[str | None, str]:
    """(the browser's path, "") or (None, why it cannot be had here). Only
    root installs it (apt-get), one process at a time; TRACE_NO_BROWSER_INSTALL=1
    forbids installing."""
    found = find_chromium()
    if found:
        return found, ""
    if os.environ.get("TRACE_NO_BROWSER_INSTALL"):
        return None, "Chromium is not installed and TRACE_NO_BROWSER_INSTALL forbids installing it"
    if not shutil.which("apt-get"):
        return None, "Chromium is not installed and there is no apt-get to install it with"
    if os.geteuid() != 0:
        return None, "Chromium is not installed; as root: apt-get install -y chromium"
    with open(_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)                # another test worker may be installing it
        found = find_chromium()
        if found:
            return found, ""
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
        last = ""
        for steps in ([install], [["apt-get", "update"], install]):
            try:
                for step in steps:
                    done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)
                    last = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
                    last = last[0]
                    if done.returncode != 0:
                        break
                else:
                    if find_chromium():
                        return find_chromium(), ""
            except (OSError, subprocess.TimeoutExpired) as exc:
                last = str(exc)
        return None, f"Chromium could not be installed with apt-get ({last})"


def screenshot(chromium: str, html: Path, png: Path, *, width: int = 1280, height: int = 720,
               fragment: str = "") -> None:
    url = Path(html).resolve().as_uri() + (f"#{fragment}" if fragment else "")
    with tempfile.TemporaryDirectory(prefix="trace-chromium-") as profile:
        env = {**os.environ, "HOME": profile}
        done = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
                               f"--screenshot={Path(png).resolve()}", url],
                              capture_output=True, text=True, timeout=180, env=env, cwd=profile)
    if done.returncode != 0 or not Path(png).is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"chromium failed ({done.returncode}): {' | '.join(tail)}")


class Png:
    """An 8-bit RGB or RGBA PNG, decoded (what Chromium's screenshots are)."""

    def __init__(self, path: Path):
        data = Path(path).read_bytes()
        if data[:8] != b"\x89PNG\r\n\x1a\n":
            raise ValueError(f"{path} is not a PNG")
        pos, idat = 8, []
        while pos < len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            if kind == b"IHDR":
                self.width, self.height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
                if depth != 8 or color not in (2, 6) or interlace:
                    raise ValueError(f"unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
                self.channels = 3 if color == 2 else 4
            elif kind == b"IDAT":
                idat.append(body)
            pos += 12 + length
        raw = zlib.decompress(b"".join(idat))
        stride = self.width * self.channels
        rows: list[bytearray] = []
        prev = bytearray(stride)
        bpp = self.channels
        for y in range(self.height):
            start = y * (stride + 1)
            kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
            if kind == 1:
                for i in range(bpp, stride):
                    row[i] = (row[i] + row[i - bpp]) & 0xFF
            elif kind == 2:
                row = bytearray((a + b) & 0xFF for a, b in zip(row, prev))
            elif kind == 3:
                for i in range(stride):
                    left = row[i - bpp] if i >= bpp else 0
                    row[i] = (row[i] + ((left + prev[i]) >> 1)) & 0xFF
            elif kind == 4:
                for i in range(stride):
                    a = row[i - bpp] if i >= bpp else 0
                    b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            rows.append(row)
            prev = row
        self.rows = rows

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        i = x * self.channels
        r = self.rows[y]
        return r[i], r[i + 1], r[i + 2]

