"""WordLlama's query tokenizer tables (token -> id, "left right" -> merge
rank), kept where a new process reads them fast.

A cold `trace recall --mode hybrid` embeds one short query. Its BPE needs
the ranks of a hundred or so symbol pairs, but reading them from the
tokenizer's 1.8 MB JSON meant parsing all of it and building dicts of 93k
entries: ~45 ms of CPU a process. Laid out as flat hash tables
(reducers/rank_table.py, in the user's cache directory beside cl100k's
ranks: stores/tokenizer/rank_cache.py) they are looked up where they lie. The
files are named by the JSON's size and time, so a reinstall makes new
ones; a missing, damaged or unwritable file means the JSON, as before.
Lookups give exactly what the dicts give."""
from __future__ import annotations

from pathlib import Path

from reducers.rank_table import RankTable
from stores.tokenizer.rank_cache import cache_dir, read_ranks, write_ranks


_UNSEEN = object()


class _TextKeys:
    """A RankTable asked with str keys (what reducers/bpe.py passes). The
    answers are remembered: a long-lived process (a warm Store, the server)
    embeds query after query, and most symbol pairs recur, so a dict
    lookup replaces encoding the key and probing the table (a few hundred
    per query). The table never changes under it; the memo is capped."""
    __slots__ = ("_table", "_seen")
    MEMO = 65_536

    def __init__(self, table: RankTable):
        self._table = table
        self._seen: dict[str, int | None] = {}

    def get(self, key: str, default=None):
        found = self._seen.get(key, _UNSEEN)
        if found is _UNSEEN:
            if len(self._seen) >= self.MEMO:
                self._seen.clear()
            found = self._seen[key] = self._table.get(key.encode("utf-8", "surrogatepass"))
        return default if found is None else found

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None


def bpe_tables(tokenizer_json: Path, directory: Path | None = None) -> tuple:
    """(vocab, ranks) for reducers.bpe.bpe_ids: the cached tables when both
    files are whole, else the JSON's dicts (and the files written for the
    next process)."""
    directory = cache_dir() if directory is None else directory
    st = tokenizer_json.stat()
    stem = f"wordllama-{st.st_size}-{st.st_mtime_ns}"
    paths = directory / f"{stem}.vocab", directory / f"{stem}.merges"
    cached = [read_ranks(p) for p in paths]
    if all(c is not None and c[0].get("source") == tokenizer_json.name for c in cached):
        return tuple(_TextKeys(table) for _, table in cached)
    import orjson
    model = orjson.loads(tokenizer_json.read_bytes())["model"]
    vocab = model["vocab"]
    ranks = {m if isinstance(m, str) else " ".join(m): i for i, m in enumerate(model["merges"])}
    for path, table in zip(paths, (vocab, ranks)):
        write_ranks(path, {"source": tokenizer_json.name},
                    {k.encode("utf-8", "surrogatepass"): v for k, v in table.items()})
    return vocab, ranks
