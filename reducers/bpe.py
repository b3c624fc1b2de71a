"""Byte-pair encoding as Llama's SentencePiece-style tokenizer does it (the
one WordLlama's vectors are keyed by): the text with a leading "▁" and its
spaces as "▁", split into characters (a character the vocabulary lacks
becomes its UTF-8 bytes, "<0xNN>"), then the adjacent pair of lowest merge
rank merged, leftmost first, until no listed pair is left.

Pure Python, for one short text: a cold `trace recall` embeds only its
query, and building the Rust tokenizer from its 1.8 MB JSON cost ~0.1 s,
several times what this costs for a query. Ingest embeds in batches and
keeps the Rust tokenizer; a test checks both give the same ids."""
from __future__ import annotations

import heapq

SPACE = "\u2581"


def bpe_ids(text: str, vocab: dict[str, int], ranks: dict[str, int]) -> list[int]:
    """Token ids of `text`. `ranks` maps "left right" (the merges list's
    form) to the merge's rank; `vocab` maps a token to its id."""
    if not text:
        return []
    symbols: list[str] = []
    for ch in SPACE + text.replace(" ", SPACE):
        if ch in vocab:
            symbols.append(ch)
        else:
            symbols.extend(f"<0x{b:02X}>" for b in ch.encode("utf-8"))
    n = len(symbols)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    alive = [True] * n
    heap = []
    for i in range(n - 1):
        rank = ranks.get(f"{symbols[i]} {symbols[i + 1]}")
        if rank is not None:
            heap.append((rank, i, symbols[i], symbols[i + 1]))
    heapq.heapify(heap)
    while heap:
        rank, i, left, right = heapq.heappop(heap)
        j = nxt[i] if i < n else n
        # A stale entry: one side was merged away since it was pushed.
        if not alive[i] or j >= n or symbols[i] != left or symbols[j] != right:
            continue
        symbols[i] = left + right
        alive[j] = False
        nxt[i] = nxt[j]
        if nxt[j] < n:
            prv[nxt[j]] = i
        p = prv[i]
        if p >= 0:
            r = ranks.get(f"{symbols[p]} {symbols[i]}")
            if r is not None:
                heapq.heappush(heap, (r, p, symbols[p], symbols[i]))
        q = nxt[i]
        if q < n:
            r = ranks.get(f"{symbols[i]} {symbols[q]}")
            if r is not None:
                heapq.heappush(heap, (r, i, symbols[i], symbols[q]))
    return [vocab.get(s, 0) for s, ok in zip(symbols, alive) if ok]
