"""The imperative shell's disk half: every byte TRACE writes goes through
a module here. Nothing here imports typer or rich."""

# Every process that opens a store counts tokens: let it read cl100k's ranks
# from the fast cache instead of re-parsing tiktoken's base64 file (and
# count a process's first few texts without building tiktoken's encoder).
from reducers import tokens as _tokens  # noqa: E402
from stores.tokenizer import rank_cache as _rank_cache  # noqa: E402

_tokens.load_with(_rank_cache.load_tables)
