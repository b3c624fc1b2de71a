"""state.db remembers every dedupe key exactly: a key it stored differently
would never match again, and a re-ingest would append its event twice."""
import pytest

from stores.ingest_state import IngestState

ODD_KEYS = [
    "openai/sess\x00ion/c0/abc/m0/0",        # U+0000 ends a string in SQLite's JSON
    "openai/sess/c0/abc/m0",                 # ...so it must not collide with this one
    "cc/\u2028line-separator/1",
    "cc/😀/quote\"back\\slash/2",
    "cc/literal \\u0000 text/3",
]


def _events(keys: list[str]) -> list[dict]:
    return [{"seq": i + 1, "id": f"id{i}", "session_id": "s", "kind": "user", "tokens": 1,
             "ts": "2026-01-01T00:00:00.000Z", "source": {"key": k}} for i, k in enumerate(keys)]


@pytest.mark.parametrize("batch", [ODD_KEYS, ODD_KEYS[1:], [ODD_KEYS[0]]])
def test_recorded_keys_are_found_again_exactly(tmp_path, batch):
    state = IngestState(tmp_path)
    state.record(_events(batch))
    assert state.seen_among(ODD_KEYS) == set(batch)
    assert state.keys_seq == len(batch)
    state.close()


def test_declined_keys_are_remembered_exactly(tmp_path):
    state = IngestState(tmp_path)
    state.record_declined(ODD_KEYS[:1])
    assert state.seen_among(ODD_KEYS) == {ODD_KEYS[0]}
    state.close()
