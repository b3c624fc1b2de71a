"""What recall needs of a full-text hit, packed by seq (`fulltext/hits.bin`)."""
from stores.hit_records.records import COLUMNS, FILE, HitRecords, Record

__all__ = ["COLUMNS", "FILE", "HitRecords", "Record"]
