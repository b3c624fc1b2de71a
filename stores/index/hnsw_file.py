"""hnsw.bin as hnswlib 0.8 saves it, checked before hnswlib loads it.

hnswlib trusts the file: a neighbour id past the element count, or a link
count past the list's room, sends its graph walk outside its arrays (a
segmentation fault, not an error). Bytes the disk changed keep the file's
size and time, so the stat check misses them; this checks the structure
the walk relies on: the header, every element's level-0 links, and the
upper levels' link lists, in one pass (~10 ms per 100k elements)."""
from __future__ import annotations

import math
import struct
from pathlib import Path

HEADER = struct.Struct("<6QiI3QdQ")     # offsetLevel0 .. ef_construction (96 bytes)


def hnsw_problem(path: Path, dim: int) -> str | None:
    """Why hnswlib must not load this file (None: its graph is sound)."""
    import numpy as np
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
        (off0, _cap, count, size, label_at, vec_at, maxlevel, entry,
         max_m, max_m0, _m, mult, _ef) = HEADER.unpack_from(data, 0)
    except (OSError, ValueError, struct.error) as exc:
        return f"cannot be read as an HNSW graph ({exc})"
    links0 = 4 + 4 * max_m0
    if (off0 != 0 or count < 1 or not 0 <= maxlevel < 64 or entry >= count or not 0 < max_m <= max_m0 < 4096
            or vec_at != links0 or label_at != vec_at + 4 * dim or size != label_at + 8
            or not (math.isfinite(mult) and mult > 0) or data.size < HEADER.size + count * size):
        return "has an HNSW header that does not describe it"
    rows = data[HEADER.size:HEADER.size + count * size].reshape(count, size)
    counts = rows[:, 0:2].copy().view(np.uint16)[:, 0]
    if (counts > max_m0).any():
        return "has a level-0 link list longer than its room"
    ids = rows[:, 4:links0].copy().view(np.uint32)
    if (ids[np.arange(max_m0) < counts[:, None]] >= count).any():
        return "has a level-0 link to an element that does not exist"
    rest = data[HEADER.size + count * size:]
    if rest.size % 4:
        return "ends part-way through its upper levels"
    words = rest.view(np.uint32).tolist()
    per_level = max_m + 1                         # a link count, then max_m ids
    at = 0
    for _ in range(count):                        # each element: its upper levels' size in bytes, then them
        if at >= len(words):
            return "ends part-way through its upper levels"
        n_bytes = words[at]
        at += 1
        if not n_bytes:
            continue
        if n_bytes % (4 * per_level) or n_bytes // (4 * per_level) > maxlevel:
            return "has an upper-level link list of a size it cannot have"
        if at + n_bytes // 4 > len(words):            # a size it can have, cut short: a truncated file
            return "ends part-way through its upper levels"
        for start in range(at, at + n_bytes // 4, per_level):
            n = words[start] & 0xFFFF
            if n > max_m or any(i >= count for i in words[start + 1:start + 1 + n]):
                return "has an upper-level link to an element that does not exist"
        at += n_bytes // 4
    return None if at == len(words) else "has bytes after its last element"
