"""What recall needs of a full-text hit, packed by seq (`fulltext/hits.bin`)."""
from stores.hit_records.records import FILE, HitRecords, Record

__all__ = ["FILE", "HitRecords", "Record"]
