"""Evidence and recovery: damaged derived files (derived.py, reading their
JSON records with json_record.py), the log's
seals against changes made behind TRACE's back (seals.py), and
`trace verify --repair` (repair.py)."""
