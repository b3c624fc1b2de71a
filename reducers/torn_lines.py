"""What a transcript line that is not JSON still holds after a crashed
write. Two shapes are common in real session logs (Claude Code's issue
tracker has many reports of both):

- a run of NUL bytes: the file grew but the data never reached the disk
  (ext4 delayed allocation, NTFS after a power loss). The run is a line of
  its own, or pads a record, or precedes the record the writer appended
  next on the same line;
- a record cut short, with the next record appended right after it on the
  same line (the writer died mid-line and its successor did not start a
  new one).

`salvage` returns the whole records such a line still holds and what was
lost, so the caller reads the records and reports the loss: nothing whole
is dropped and nothing lost goes unsaid. Pure: bytes in, values out."""
from __future__ import annotations

import re
from typing import Any, Callable

_NULS = re.compile(rb"\x00+")
_RECORD_START = re.compile(rb"\{\s*\"")          # where an appended JSON object may begin
_MAX_STARTS = 64                                 # restarts tried on one line: bad lines stay cheap


def salvage(raw: bytes, loads: Callable[[bytes], Any]) -> tuple[list[Any], str] | None:
    """(the records `raw` still holds, what was lost) when it is a torn
    line of one of the shapes above; None when it is not (plain bad JSON
    stays the caller's to report as it is). `loads` decodes one JSON value
    and raises ValueError when it cannot."""
    split = _NULS.split(raw)
    nuls = len(raw) - sum(len(p) for p in split)
    pieces = [p for p in split if p.strip()]
    records: list[Any] = []
    cut = 0
    for piece in pieces:
        whole = _loads(piece, loads)
        if whole is not _NOT_JSON:
            records.append(whole)
            continue
        tail = _appended_record(piece, loads)
        if tail is None:
            return None                          # not a torn line: some other text that is not JSON
        cut += 1
        records.append(tail)
    if not nuls and not cut:
        return None
    lost = []
    if nuls:
        lost.append(f"{nuls} NUL bytes (data a crash kept from reaching the disk)")
    if cut:
        lost.append("a record cut short by a crashed write, the next one appended on its line"
                    if cut == 1 else f"{cut} records cut short by a crashed write")
    kept = f"; the {len(records)} whole record(s) on it are read" if records else ""
    return records, " and ".join(lost) + kept


_NOT_JSON = object()


def _loads(raw: bytes, loads: Callable[[bytes], Any]) -> Any:
    try:
        return loads(raw)
    except ValueError:
        return _NOT_JSON


def _appended_record(piece: bytes, loads: Callable[[bytes], Any]) -> Any:
    """The JSON object that ends `piece` after a cut-short start, or None."""
    for n, match in enumerate(_RECORD_START.finditer(piece, 1)):
        if n >= _MAX_STARTS:
            return None
        value = _loads(piece[match.start():], loads)
        if isinstance(value, dict):
            return value
    return None
