"""The optional model-backed extractor's two pure halves: the prompt for a
batch of messages, and the reading of the model's JSON answer.

The command gets the prompt on stdin and must print JSON: either
`{"facts": [...]}` or a bare list, each fact
`{"type", "key", "value", "seq", "importance"?, "replaces"?, "delete"?}`
where `seq` is the event the fact comes from (one of the batch's). An
answer that is not that shape is rejected whole (the batch then falls back
to the rule-based extractor): a half-understood answer is not used."""
from __future__ import annotations

import orjson

from reducers.fact_keys import FACT_TYPES, FactCandidate, clip, good_value, norm_key, source_time_known

MAX_EVENT_CHARS = 2000

INSTRUCTIONS = """You extract durable facts from an agent session for a memory ledger.
Fact types: decision, config, implementation, issue, task_state, architecture, preference, personal
(what the user says of themselves: where they live, their employer, their manager, the tools they use).
A fact names what it is about (key: the setting, the thing a decision chose for, the file)
and its value. Only facts the text states as settled; no questions, plans or guesses;
never secrets. Answer with JSON only:
{"facts": [{"type": "...", "key": "...", "value": "...", "seq": <event seq>,
            "importance": 0.0-1.0, "replaces": "<old value, if the text says so>",
            "delete": <true only if the text explicitly removes the thing>}]}
Events:
"""


class BadAnswer(ValueError):
    """The model's answer is not the JSON asked for (the message says how)."""


def prompt(events: list[dict]) -> str:
    lines = [INSTRUCTIONS]
    for e in events:
        text = " ".join((e.get("text") or "").split())[:MAX_EVENT_CHARS]
        lines.append(f"[seq {e['seq']} {e['kind']}] {text}")
    return "\n".join(lines) + "\n"


def parse_answer(raw: bytes | str, events: list[dict]) -> list[FactCandidate]:
    """Fact candidates from the model's answer; BadAnswer when it is not usable."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadAnswer(f"not JSON ({exc})") from None
    if isinstance(data, dict):
        data = data.get("facts")
    if not isinstance(data, list):
        raise BadAnswer('expected {"facts": [...]} or a list')
    by_seq = {e["seq"]: e for e in events}
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise BadAnswer(f"fact {i} is not an object")
        kind, key, value, seq = item.get("type"), item.get("key"), item.get("value"), item.get("seq")
        if kind not in FACT_TYPES:
            raise BadAnswer(f"fact {i}: type {kind!r} is not one of {', '.join(FACT_TYPES)}")
        if not isinstance(key, str) or not norm_key(key):
            raise BadAnswer(f"fact {i}: no key")
        if not isinstance(value, str) or not good_value(value):
            raise BadAnswer(f"fact {i}: no usable value")
        if seq not in by_seq:
            raise BadAnswer(f"fact {i}: seq {seq!r} is not one of the batch's events")
        importance = item.get("importance", 0.6)
        if not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            raise BadAnswer(f"fact {i}: importance must be a number from 0 to 1")
        event = by_seq[seq]
        replaces = item.get("replaces") if isinstance(item.get("replaces"), str) else None
        out.append(FactCandidate(type=kind, key=norm_key(key), value=value.strip(), text=clip(event.get("text") or ""),
                                 importance=float(importance), label=key.strip(), replaces=replaces or None,
                                 delete=item.get("delete") is True, rule="llm",
                                 source={"id": event.get("id"), "seq": seq, "session_id": event.get("session_id"),
                                         "ts": event.get("ts") or event.get("ingested_at"), "dated": source_time_known(event), "kind": event.get("kind")}))
    return out
