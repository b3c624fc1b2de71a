"""The context window as a cache over the log: the push pack (`trace
context`, pack.py), compaction (`trace compact`, compaction.py), the
per-session cache file they share (cache_file.py), and how a render reads
a session without reading the rest of the store (view.py, reading.py).

    from stores.context import compact, push_pack

Names load on first use: a render never pays for the write path's imports."""
from __future__ import annotations

_WHERE = {"push_pack": "pack", "PushResult": "pack", "compact": "compaction", "CompactResult": "compaction"}
__all__ = list(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'stores.context' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"stores.context.{_WHERE[name]}"), name)
