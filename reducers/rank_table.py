"""A BPE rank table that is ready the moment its bytes are read: token
bytes looked up in an open-addressing hash table laid out flat, instead of
a dict of 100k entries built first (building cl100k's dict costs a new
process ~60 ms of CPU, far more than the few thousand lookups a hook call
or a cold `trace context` makes).

Layout (native uint32, the file is a per-machine cache): `offsets`
(count + 1 entries: token i is blob[offsets[i]:offsets[i + 1]]), `slots`
(a power of two; 0 is empty, else token index + 1, probed linearly from
crc32(token) & (slots - 1)), then the token bytes. Ranks must run 0..n-1,
so a token's index is its rank."""
from __future__ import annotations

import array
import zlib


class RankTable:
    """`ranks.get(token)` over the flat layout (all byte_bpe asks of ranks)."""
    __slots__ = ("_offsets", "_slots", "_blob", "_mask", "count")

    def __init__(self, body: memoryview, count: int, n_slots: int):
        self._offsets = body[:4 * (count + 1)].cast("I")
        self._slots = body[4 * (count + 1):4 * (count + 1 + n_slots)].cast("I")
        self._blob = body[4 * (count + 1 + n_slots):]
        self._mask = n_slots - 1
        self.count = count

    def get(self, token: bytes, default=None):
        offsets, slots, blob, mask = self._offsets, self._slots, self._blob, self._mask
        h = zlib.crc32(token) & mask
        while True:
            i = slots[h]
            if i == 0:
                return default
            i -= 1
            if blob[offsets[i]:offsets[i + 1]] == token:
                return i
            h = (h + 1) & mask

    def to_dict(self) -> dict[bytes, int]:
        offsets, blob = self._offsets, bytes(self._blob)
        return {blob[offsets[i]:offsets[i + 1]]: i for i in range(self.count)}


def layout(ranks: dict[bytes, int]) -> tuple[bytes, int, int] | None:
    """(body, count, slots) for `ranks`, or None unless ranks run 0..n-1."""
    tokens = sorted(ranks, key=ranks.__getitem__)
    if any(ranks[token] != i for i, token in enumerate(tokens)):
        return None
    n_slots = 1
    while n_slots < 2 * len(tokens):
        n_slots *= 2
    offsets, slots, at = array.array("I", [0]), array.array("I", bytes(4 * n_slots)), 0
    for i, token in enumerate(tokens):
        at += len(token)
        offsets.append(at)
        h = zlib.crc32(token) & (n_slots - 1)
        while slots[h]:
            h = (h + 1) & (n_slots - 1)
        slots[h] = i + 1
    return offsets.tobytes() + slots.tobytes() + b"".join(tokens), len(tokens), n_slots
