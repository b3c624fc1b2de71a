"""Property: whatever text a transcript holds, ingest keeps it exactly (with
redaction off), a large output comes back byte for byte from its artifact,
and export -> ingest into an empty store reproduces the same events."""
from __future__ import annotations

import itertools
import json

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.log.lookup import export_events, full_text
from stores.store import Store

_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=300).filter(str.strip)
_turn = st.tuples(_text, st.one_of(st.none(), _text), _text)      # question, tool output (or none), answer
_counter = itertools.count()


def _conversation(turns, big: int) -> list[dict]:
    msgs = []
    for i, (question, output, answer) in enumerate(turns):
        msgs.append({"role": "user", "content": question})
        if output is not None:
            call = f"call_{i}"
            body = output * big if i == 0 else output                # the first output crosses the artifact threshold
            msgs += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": call, "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": call, "content": body}]
        msgs.append({"role": "assistant", "content": answer})
    return msgs


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(_turn, min_size=1, max_size=4), big=st.sampled_from([1, 4000]))
def test_any_text_survives_ingest_and_an_export_round_trip(tmp_path, turns, big):
    run = tmp_path / str(next(_counter))
    run.mkdir()
    msgs = _conversation(turns, big)
    src = run / "chat.json"
    src.write_text(json.dumps(msgs))
    store = Store(run / "a")
    results = list(store.ingest([str(src)], redact=False, embed=False, working_state=False))
    assert results[0].errors == 0
    events = list(export_events(store, with_artifacts=False))
    # every message, in order, is an event whose full content is the source text
    expected = [(m["role"] if m["role"] != "tool" else "tool_result", m["content"]) for m in msgs
                if m["content"] is not None]
    got = [(e["kind"], full_text(store, e)) for e in events if e["kind"] != "tool_call"]
    assert got == expected
    # export -> ingest into an empty store: the same events
    exported = run / "export.jsonl"
    exported.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in export_events(store)))
    copy = Store(run / "b")
    list(copy.ingest([str(exported)], redact=False, embed=False))
    volatile = ("seq", "prev", "hash", "ingested_at")
    assert [{k: v for k, v in e.items() if k not in volatile} for e in export_events(copy)] == \
           [{k: v for k, v in e.items() if k not in volatile} for e in export_events(store)]
