"""Transcript formats: one module per format, each a pure `parse(records, ctx)`
that turns decoded source records into drafts, plus `sniff(samples)` for
auto-detection. Reading bytes off disk is the shell's job (stores/ingest/sources.py)."""
