"""`trace ingest`: reading transcripts off disk or stdin (sources.py, with
big_lines.py for a line too large to hold), and the run that parses them and
feeds the appender (run.py)."""
