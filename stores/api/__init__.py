"""The Python API every command wraps: `Store`'s command methods
(commands.py) and the typed results they return (results.py).

    from trace_cli import Store
    store = Store("/path/to/store")
    hits = store.recall("which port does the gateway use", k=3)
    print(hits.to_json())            # every result: .to_dict() and .to_json()"""
