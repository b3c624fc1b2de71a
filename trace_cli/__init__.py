"""TRACE's command line and its Python API.

    from trace_cli import Store
    store = Store()                 # or Store("/path/to/store")
    results = list(store.ingest(["session.jsonl"]))
    store.verify().ok
"""
from stores.store import Store

__all__ = ["Store"]
__version__ = "0.1.0"
