"""Tool output kept in artifacts/ shows only its ingest preview in the
event (stores/log/externalize.py: ~500 tokens). When the pack may show more
(`--tool-max-tokens`, TRACE_TOOL_MAX_TOKENS), or less, the stub is rebuilt
from the artifact at the size allowed — the same 50/50 head and tail with both
markers — streaming it and keeping only its first and last few hundred KB.
Only the newest WIDEN_RESULTS such results of a render are widened: the
I/O follows what the pack can show."""
from __future__ import annotations

from reducers.tokens import count_tokens
from reducers.truncate import middle_stub

WIDEN_RESULTS = 16
EDGE_BYTES = 256 * 1024


def widen_results(store, events: list[dict], max_tokens: int) -> list[dict]:
    out = list(events)
    done = 0
    for i in range(len(out) - 1, -1, -1):
        e = out[i]
        art = e.get("artifact") or {}
        if e["kind"] != "tool_result" or not art.get("id") or (art.get("tokens") or 0) <= (e.get("tokens") or 0):
            continue
        # Rebuilt at any allowed size, smaller than the preview too: cutting
        # the preview again would name its own lines and tokens, not the output's.
        out[i] = _widened(store, e, max_tokens)
        done += 1
        if done >= WIDEN_RESULTS:
            break
    return out


def _widened(store, e: dict, max_tokens: int) -> dict:
    art = e["artifact"]
    head, tail, lines, last = b"", b"", 0, b"\n"
    try:
        for chunk in store.artifacts.iter_bytes(art["id"]):
            if len(head) < EDGE_BYTES:
                head += chunk[:EDGE_BYTES - len(head)]
            tail = (tail + chunk)[-EDGE_BYTES:]
            lines += chunk.count(b"\n")
            last = chunk[-1:] or last
    except (OSError, ValueError):
        return e                                      # the preview still stands; `trace verify` names the damage
    lines += 0 if last == b"\n" else 1
    hint = f"trace show {e['seq']} --full"
    total = art.get("tokens") or 0
    if total <= max_tokens and len(head) < EDGE_BYTES:
        text = head.decode("utf-8", "replace")        # the whole output fits
    else:
        text = middle_stub(head.decode("utf-8", "ignore"), tail.decode("utf-8", "ignore"), total_tokens=total,
                           total_lines=lines, max_tokens=max_tokens, hint=hint)
    return {**e, "text": text, "tokens": count_tokens(text)}
