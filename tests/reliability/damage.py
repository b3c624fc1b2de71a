"""Damage for the reliability tests: the ways a file goes bad on disk."""
from __future__ import annotations

import os
import random
from pathlib import Path

KINDS = ("empty", "half", "garbage", "flip", "delete", "append", "bitrot")


def damage(path: Path, kind: str, rng: random.Random) -> None:
    data = path.read_bytes()
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "half":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "garbage":                                  # same size, every byte replaced
        path.write_bytes(bytes(rng.randrange(256) for _ in range(max(len(data), 16))))
    elif kind in ("flip", "bitrot"):                         # 64 bytes in the middle changed
        b = bytearray(data or b"\0")
        start = rng.randrange(max(len(b) - 64, 1))
        for i in range(start, min(len(b), start + 64)):
            b[i] ^= 0x5A
        st = os.stat(path)
        path.write_bytes(bytes(b))
        if kind == "bitrot":                                 # the disk did it: no write, no new mtime
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif kind == "delete":
        path.unlink()
    elif kind == "fifo":                                     # a named pipe: opened to read, it waits for a writer
        path.unlink()
        os.mkfifo(path)
    elif kind == "append":
        path.write_bytes(data + b"\x00junk\xff" * 10)
    else:
        raise ValueError(kind)


def rewrite_with_hashes(segment: Path) -> None:
    """A careful forger: the segment's first line changed and every hash
    after it recomputed, so each line's own hash and its link hold."""
    import orjson

    from reducers.canonical import seal_line
    lines = [orjson.loads(line) for line in segment.read_bytes().splitlines()]
    prev, out = lines[0]["prev"], []
    for i, event in enumerate(lines):
        event.pop("hash")
        event["prev"] = prev
        if i == 0:
            event["text"] = "rewritten history"
        _, line, prev = seal_line(event)
        out.append(line)
    segment.write_bytes(b"".join(out))
