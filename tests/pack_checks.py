"""What every push pack must satisfy, checked from the outside: through the
API shape a client sends and `trace show`, never through the renderer's own
bookkeeping alone. Used by the real-session sweep (tests/test_pack_sweep.py),
which any directory of transcripts can be run through (TRACE_PACK_SWEEP)."""
from __future__ import annotations

import re

import orjson

from reducers.pack_formats import to_anthropic, to_openai
from reducers.tokens import count_tokens
from stores.log.lookup import events_by_selector, marker_events
from stores.store import Store
from tests.helpers import cli

CLI_CHECKS = 40

_NEED = re.compile(r"raise --budget to at least (\d+)")


def needed_budget(message: str) -> int | None:
    m = _NEED.search(message)
    return int(m.group(1)) if m else None


def openai_tokens(msgs: list[dict]) -> int:
    """The pack's size counted again from what the client sends."""
    total = 0
    for m in msgs:
        total += count_tokens(m.get("content") or "") + count_tokens(m.get("tool_call_id") or "") + 4
        for c in m.get("tool_calls") or ():
            total += (count_tokens(c["function"]["name"] or "") + count_tokens(c["function"]["arguments"])
                      + count_tokens(c.get("id") or ""))
    return total


def anthropic_tokens(body: dict) -> int:
    """The same count over an Anthropic Messages request: its system text,
    and each message's blocks (the user line it may open with included)."""
    total = count_tokens(body["system"] or "")
    for m in body["messages"]:
        total += 4
        for b in m["content"]:
            if b["type"] == "text":
                total += count_tokens(b["text"])
            elif b["type"] == "tool_use":
                total += count_tokens(b["name"]) + count_tokens(orjson.dumps(b["input"]).decode()) + count_tokens(b["id"])
            else:
                total += count_tokens(b["content"]) + count_tokens(b["tool_use_id"])
    return total


_cli_checks = [0]


def shown_by(selector: list[str]) -> set[int]:
    """The non-marker events `trace show SELECTOR` prints: through the CLI
    for the first CLI_CHECKS calls of a run, then through the functions it
    runs (parsing the command tree costs more than the lookup)."""
    if _cli_checks[0] < CLI_CHECKS:
        _cli_checks[0] += 1
        run = cli("show", *selector, "--json")
        assert run.code == 0, (selector, run.err)
        return {e["seq"] for e in run.lines() if e["kind"] != "marker"}
    store = Store()
    if selector[0] == "--marker":
        events = marker_events(store, selector[1])
    else:
        session = selector[selector.index("--session") + 1]
        events = [e for e in events_by_selector(store, selector[0]) if e["session_id"] == session]
    return {e["seq"] for e in events if e["kind"] != "marker"}


def check_pack(result, session_events: list[dict], budget: int) -> dict:
    """The Bar for one pack; returns what it found (for the sweep's report)."""
    pack = result.pack
    msgs = to_openai(pack)
    body = to_anthropic(pack)
    assert pack.tokens <= budget and openai_tokens(msgs) <= budget, (pack.tokens, budget)
    assert anthropic_tokens(body) <= budget, (anthropic_tokens(body), budget)
    assert not body["messages"] or body["messages"][0]["role"] == "user"
    # every call answered, right after the message that made it; no result without its call;
    # no id sent twice (Anthropic rejects a request whose tool_use ids repeat)
    ids = [c["id"] for m in msgs for c in m.get("tool_calls") or ()]
    assert len(ids) == len(set(ids)), "a call id sent twice"
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            prev = next(x for x in reversed(msgs[:i]) if x["role"] != "tool")
            assert prev["role"] == "assistant" and m["tool_call_id"] in {c["id"] for c in prev["tool_calls"]}
        for c in m.get("tool_calls") or ():
            assert any(x["role"] == "tool" and x["tool_call_id"] == c["id"] for x in msgs[i + 1:]), c["id"]
            assert isinstance(c["function"]["arguments"], str)
    users = [e for e in session_events if e["kind"] == "user"]
    if users:
        assert any(m["role"] == "user" and m.get("content") for m in msgs), "a session with a prompt, a pack without"
        assert users[-1]["seq"] in pack.event_seqs or (users[-1].get("text") or "").startswith("<recalled-context")
    # every event the pack leaves out is reachable from a marker in it, and the
    # elision marker's ranges print exactly what was left out
    shown = set(pack.event_seqs)
    missing = {e["seq"] for e in session_events if e["kind"] != "marker"} - shown
    reached: set[int] = set()
    for marker in result.markers:
        if marker.get("id"):
            reached |= shown_by(["--marker", marker["id"]])
        else:
            elided = shown_by([marker["text"].split("trace show ", 1)[1].split(" --session")[0],
                               "--session", result.session_id])
            assert not elided & shown, sorted(elided & shown)[:10]
            reached |= elided
    assert missing <= reached, sorted(missing - reached)[:20]
    return {"tokens": pack.tokens, "missing": len(missing), "markers": len(result.markers)}
