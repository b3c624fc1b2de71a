"""A hit's numbers in one place: `fulltext/hits.bin`, one fixed-size record
per seq (where the event is in the log, its session ordinal and position,
time, speaker key, length, kind, traits), derived from the full-text index's fast
columns.

Why: Tantivy answers a column read for a batch of hits in ~70 µs at 7-8
segments whatever the batch's size, and a hit needs eight columns; the
seq column and this file give the same numbers for one read (recall at 1M
events reads hits three or four times a query, `latest` once per session
weighed).

Layout: record `seq` at byte seq × 64 (the slot of seq 0 is the header:
magic, the seq up to which the file is complete, a CRC). A record is seq,
segment, offset, gp, ts, speaker key, chars, kind code, traits and a CRC-32 of the
rest: a reader trusts a record only when its seq and CRC agree and the
header vouches for it; anything else (no file, a torn or damaged record, a
seq past the header) and the reader reads the columns instead, so the
file can never change an answer.

Writing (the writer lock held, after Tantivy commits and before the
watermark moves): the records of every seq past the header's are read
from the committed index's columns and written, then the header. A crash
before the header leaves the old header, and the next commit writes those
records again. A store indexed before this file existed gets it at its
next commit. The index is rebuilt into a fresh folder, so no record
outlives the index it was read from."""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import NamedTuple
from zlib import crc32

from stores.integrity.regular_files import open_regular

FILE = "hits.bin"
SIZE = 64
_BODY = struct.Struct("<QQQQqQIII")         # seq, seg, off, gp, ts, spk, chars, kno, traits: 60 bytes
_RECORD = struct.Struct("<QQQQqQIIII")      # the body and its CRC-32: SIZE
_HEADER = struct.Struct("<8sQI")            # magic, complete up to seq, CRC-32 of the two
_MAGIC = b"TRHITS02"                        # 02: the traits column
COLUMNS = ("seq", "seg", "off", "gp", "ts", "spk", "chars", "kno", "traits")
PAGE = 65_536                               # seqs read from the index per query while catching up


class Record(NamedTuple):
    seq: int
    seg: int
    off: int
    gp: int
    ts: int
    spk: int
    chars: int
    kno: int
    traits: int


class HitRecords:
    def __init__(self, directory: Path):
        self.path = directory / FILE
        self._map: mmap.mmap | None = None
        self._covered = 0
        self._tried = False

    # -- reading -------------------------------------------------------------------

    def read(self, seqs: list[int]) -> list[tuple] | None:
        """The records of `seqs`, in order, as tuples laid out as Record
        (plus the CRC last: a tuple straight from struct costs a hit ~1 µs
        less than a Record); None when any is missing or not to be trusted
        (the caller reads the columns)."""
        if not self._tried:
            self._open()
        data = self._map
        if data is None or not seqs or max(seqs) > self._covered or min(seqs) < 1:
            return None
        view = memoryview(data)
        unpack = _RECORD.unpack_from
        body = _BODY.size
        out = []
        try:
            for seq in seqs:
                at = seq * SIZE
                record = unpack(data, at)
                if record[0] != seq or crc32(view[at:at + body]) != record[9]:
                    return None
                out.append(record)
        except struct.error:
            return None
        return out

    def _open(self) -> None:
        self._tried = True
        try:
            with os.fdopen(open_regular(self.path), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < SIZE:
                    return
                data = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return
        covered = _covered(data[:_HEADER.size])
        if covered:
            self._map, self._covered = data, covered
        else:
            data.close()

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
        self._map, self._covered, self._tried = None, 0, False

    # -- writing (the store's writer lock held) ------------------------------------------

    def covered(self) -> int:
        """The seq up to which the file is complete (0: none, or unreadable)."""
        try:
            with os.fdopen(open_regular(self.path), "rb") as f:
                return _covered(f.read(_HEADER.size))
        except OSError:
            return 0

    def catch_up(self, index, upto: int, trusted: int) -> None:
        """Write the records of the indexed events past min(header, `trusted`)
        up to seq `upto`, read from the committed index's columns, then the
        header. `trusted`: the watermark the index had before this commit
        (records past it may be from documents a crashed writer committed
        and the next one replaced)."""
        import tantivy
        start = min(self.covered(), trusted)
        if start >= upto:
            return
        searcher = index.searcher()
        fd = open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW)
        try:
            for low in range(start + 1, upto + 1, PAGE):
                high = min(low + PAGE - 1, upto)
                query = tantivy.Query.range_query(index.schema, "seq", tantivy.FieldType.Unsigned, low, high)
                hits = searcher.search(query, high - low + 1, count=False).hits
                page = bytearray((high - low + 1) * SIZE)         # a seq with no document keeps a zero slot
                addrs = [addr for _, addr in hits]
                for values in zip(*(searcher.fast_field_values(name, addrs) for name in COLUMNS)):
                    body = _BODY.pack(*(v or 0 for v in values))
                    _RECORD.pack_into(page, (values[0] - low) * SIZE, *(v or 0 for v in values), crc32(body))
                os.pwrite(fd, page, low * SIZE)
            os.pwrite(fd, _header(upto), 0)
        finally:
            os.close(fd)


def _header(covered: int) -> bytes:
    head = struct.pack("<8sQ", _MAGIC, covered)
    return head + struct.pack("<I", crc32(head))


def _covered(head: bytes) -> int:
    if len(head) < _HEADER.size:
        return 0
    magic, covered, check = _HEADER.unpack_from(head)
    return covered if magic == _MAGIC and crc32(head[:16]) == check else 0
