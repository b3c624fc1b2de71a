"""Byte-level BPE as tiktoken counts it, in pure Python: the text split by
the encoding's pattern, each piece's UTF-8 bytes one token when the ranks
hold them whole, else merged pairwise, lowest rank first, until no
adjacent pair is in the ranks.

For a process that counts little (a hook appending one turn, a cold
`trace context`): building tiktoken's Rust encoder costs ~0.1 s of CPU,
this costs nothing to build and ~2 µs per character over the cached rank
table, so up to ~100k characters it is the cheaper one (reducers/tokens.py
decides). tests/test_tokens.py checks
both give the same counts on real transcripts and arbitrary text."""
from __future__ import annotations

from collections.abc import Callable


def piece_count(piece: bytes, ranks: dict[bytes, int]) -> int:
    """Tokens of one pre-tokenized piece."""
    if ranks.get(piece) is not None:
        return 1
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best_rank, best = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best_rank, best = rank, i
        if best_rank is None:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return len(parts)


def counter(pat_str: str, ranks: dict[bytes, int],
            max_piece: int | None = None) -> Callable[[str], int | None] | None:
    """A token counter for `text` (special tokens counted as plain text, as
    tiktoken's encode_ordinary does), or None without the `regex` module
    (the pattern's \\p{L} classes need it; tiktoken itself depends on it).

    Merging is quadratic in a piece's length: an unbroken run (a separator
    line of box-drawing characters, a minified bundle, "xxxx…") of a few
    thousand bytes takes seconds here and milliseconds in tiktoken. With
    `max_piece`, a text holding a longer piece is declined (None): the
    caller counts it with the encoder."""
    try:
        import regex
    except ImportError:
        return None
    findall = regex.compile(pat_str).findall

    def total(pieces: list[bytes]) -> int | None:
        if max_piece is not None and any(len(p) > max_piece for p in pieces):
            return None
        return sum(piece_count(p, ranks) for p in pieces)

    def count(text: str) -> int | None:
        try:
            return total([p.encode("utf-8") for p in findall(text)])
        except UnicodeEncodeError:          # lone surrogates: U+FFFD each, as tiktoken does
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return total([p.encode("utf-8") for p in findall(text)])
    return count
