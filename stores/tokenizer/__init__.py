"""Tokenizer tables from disk, from a per-user cache laid out for a fast
start: cl100k's ranks for the token counter (reducers/tokens.py,
rank_cache.py) and WordLlama's vocabulary and merges for the query
embedder (stores/index/embedders.py, wordllama_tables.py)."""
