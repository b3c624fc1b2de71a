"""Embedding helpers that own files: the query tokenizer's cached tables."""
