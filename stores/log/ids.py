"""Time-sortable unique ids (ULID layout: 48-bit milliseconds + 80 bits,
Crockford base32, 26 chars).

Monotonic within a millisecond (the low bits count up) and across
processes: only the writer holding the store lock mints ids, and it seeds
the generator with the newest id already in the log, so a new id is always
greater than every id before it even if the wall clock steps back."""
from __future__ import annotations

import os
import random
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
_MAX = (1 << 128) - 1


_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]     # 10 bits -> 2 characters
_SHIFTS = tuple(range(120, -1, -10))                        # 13 chunks cover the 130 bits of 26 chars


def encode_ulid(value: int) -> str:
    return "".join([_PAIRS[(value >> s) & 1023] for s in _SHIFTS])


def decode_ulid(text: str) -> int:
    value = 0
    for c in text.upper():
        value = (value << 5) | _DECODE[c]
    return value


def is_ulid(text: str) -> bool:
    return len(text) == 26 and all(c in _DECODE for c in text.upper()) and text[0] in "01234567"   # 128 bits


class IdGenerator:
    def __init__(self, last_id: str | None = None, clock=time.time):
        self._clock = clock
        # an imported event keeps its own id, which need not be a ULID: no floor then
        self._last = decode_ulid(last_id) if last_id and is_ulid(last_id) else 0
        self._random = random.Random(os.urandom(16))

    def observe(self, existing_id: str) -> None:
        """Raise the floor to an id that entered the log from elsewhere
        (an imported trace event keeps its original id)."""
        if is_ulid(existing_id):
            self._last = max(self._last, decode_ulid(existing_id))

    def new_batch(self, n: int) -> list[str]:
        """n consecutive ids (one clock read, one random draw): the counter
        counts up inside the batch, so within each run of 1024 values only
        the last two characters change and the 24 before them are encoded
        once per run."""
        if n <= 0:
            return []
        first = decode_ulid(self.new())
        last = first + n - 1
        if last > _MAX:
            raise OverflowError("ULID space exhausted")
        self._last = last
        out: list[str] = []
        pairs = _PAIRS
        v = first
        while v <= last:
            run_end = min(last, v | 1023)
            prefix = encode_ulid(v)[:-2]
            out += [prefix + pairs[x & 1023] for x in range(v, run_end + 1)]
            v = run_end + 1
        return out

    def new(self) -> str:
        ms = int(self._clock() * 1000)
        if ms > self._last >> 80:
            value = (ms << 80) | self._random.getrandbits(79)   # headroom to count up within the ms
        else:
            value = self._last + 1                               # same ms, or the clock stepped back
        if value > _MAX:
            raise OverflowError("ULID space exhausted")
        self._last = value
        return encode_ulid(value)
