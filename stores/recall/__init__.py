"""`trace recall` as functions: a query in, scored hits out (see recaller.py)."""
from stores.recall.recaller import MAX_QUERY_CHARS, MODES, Hit, Recaller, RecallQuery, parse_time

__all__ = ["MAX_QUERY_CHARS", "MODES", "Hit", "Recaller", "RecallQuery", "parse_time"]
