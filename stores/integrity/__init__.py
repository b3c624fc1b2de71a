"""Evidence and recovery: damaged derived files (derived.py), the log's
seals against changes made behind TRACE's back (seals.py), and
`trace verify --repair` (repair.py)."""
