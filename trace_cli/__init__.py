"""TRACE's command line and its Python API.

    from trace_cli import Store
    store = Store()                 # or Store("/path/to/store")
    results = list(store.ingest(["session.jsonl"]))
    store.verify().ok
"""
__all__ = ["Store"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy: `trace recall` starts cold on every call, so the CLI imports only what it uses.
    if name == "Store":
        from stores.store import Store
        return Store
    raise AttributeError(name)
