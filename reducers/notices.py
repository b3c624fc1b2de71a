"""The runtime's notices among a session's system events: queued prompts,
hook reminders, its own compaction summaries, a sub-agent's system lines
(system events with a subtype or marked meta), as against the system
prompt and persona, which are always shown whole. Notices pile up as a
session runs: the pack shows the newest up to a cap, like notes, and
compaction may evict the rest behind a marker."""
from __future__ import annotations

from reducers.pack_shrink import cut
from reducers.tokens import count_tokens

NOTICES_CAP = 2000                # the notes cap (continuity spec), for the runtime's notices too


def system_shown(events: list[dict], cap: int = NOTICES_CAP) -> list[dict]:
    """The system events a pack shows: the system prompt and persona whole;
    the notices newest first up to `cap` tokens, the first one cut to fit
    (pinned whole they outgrew any budget). The pack's pointer names the
    ones left out."""
    # the main thread's before a sub-agent's, each newest first
    notices = sorted((e for e in events if is_notice(e)),
                     key=lambda e: (bool((e.get("meta") or {}).get("sidechain")), -e["seq"]))
    keep, used = set(), 0
    for e in notices:
        cost = e.get("tokens") or count_tokens(e["text"])
        if used + cost > cap and keep:
            continue
        keep.add(e["seq"])
        used += min(cost, cap)
    return [cut(e, cap) if e["seq"] in keep and (e.get("tokens") or 0) > cap else e
            for e in events if not is_notice(e) or e["seq"] in keep]


def is_notice(e: dict) -> bool:
    meta = e.get("meta") or {}
    return e["kind"] == "system" and bool(meta.get("subtype") or meta.get("is_meta") or meta.get("sidechain"))
