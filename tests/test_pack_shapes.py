"""Push packs for session shapes the real transcripts rarely hold: each one
renders within budget in every format a client sends, keeps its pairs, and
names what it leaves out (tests/pack_checks.py)."""
from __future__ import annotations

import json

from reducers.pack_formats import to_anthropic
from stores.context import push_pack
from stores.store import Store
from tests.helpers import cli
from tests.pack_checks import anthropic_tokens, check_pack

WORDS = "parser cache index budget marker token render session eviction schema deploy kernel socket".split()


def _prose(n: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(n))


def _ingest(tmp_path, name: str, messages: list[dict]) -> list[dict]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(messages))
    assert cli("ingest", str(path), "--session", name).code == 0
    return [e for e in Store().events() if e["session_id"] == name]


def test_a_session_that_opens_with_the_assistant_fits_its_budget_as_an_anthropic_request(tmp_path):
    # Anthropic wants a user message first: the line the pack opens with is
    # counted like any other message, so the request stays within budget.
    events = _ingest(tmp_path, "monologue", [{"role": "assistant", "content": _prose(100, k)} for k in range(60)])
    for budget in range(900, 2201, 7):     # near-full packs, where the few tokens tell
        result = push_pack(Store(), "monologue", budget=budget)
        body = to_anthropic(result.pack)
        assert body["messages"][0]["role"] == "user"
        assert anthropic_tokens(body) <= budget, (budget, anthropic_tokens(body))
        check_pack(result, events, budget)
