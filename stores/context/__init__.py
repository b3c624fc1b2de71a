"""The context window as a cache over the log: the push pack (`trace
context`, pack.py), compaction (`trace compact`, compaction.py), the
per-session cache file they share (cache_file.py), and how a render reads
a session without reading the rest of the store (view.py, reading.py)."""
from __future__ import annotations

from stores.context.compaction import CompactResult, compact
from stores.context.pack import PushResult, push_pack

__all__ = ["CompactResult", "PushResult", "compact", "push_pack"]
