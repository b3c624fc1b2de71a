"""Every dedupe key a parser builds names its session: `<format>/<session>/…`.
Ingest relies on it to skip looking up the keys of sessions a store has
never seen (stores/log/appender.py), so it must hold for every format, on the
sample sessions, on the shared real transcripts and under --session."""
from __future__ import annotations

import orjson
import pytest

from reducers.drafts import Draft, ParseContext
from reducers.formats import anthropic, claude_code, codex, openai
from tests.conftest import SAMPLES, SHARED
from tests.formats.real_files import records

FORMATS = {"claude-code": (claude_code, "claude_code"), "codex": (codex, "codex"),
           "openai": (openai, "openai_chat"), "anthropic": (anthropic, "anthropic_messages")}


def _drafts(module, path, session):
    recs = [(1, orjson.loads(path.read_bytes()))] if path.suffix == ".json" else records(path)
    ctx = ParseContext(path=str(path), source_id=str(path), session=session)
    return [d for d in module.parse(recs, ctx) if isinstance(d, Draft)]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("session", [None, "forced/with a slash"])
def test_every_key_names_the_session_of_its_draft(fmt, session):
    module, shared_dir = FORMATS[fmt]
    paths = sorted((SAMPLES / fmt).glob("*.json*")) + sorted((SHARED / "transcripts" / shared_dir).glob("*.json*"))
    drafts = [d for path in paths for d in _drafts(module, path, session)]
    assert drafts
    for d in drafts:
        for key in d.all_keys():
            assert key.startswith(f"{key.split('/', 1)[0]}/{d.session_id}/"), (key, d.session_id)
        assert session is None or d.session_id == session
