"""The runtime's notices among a session's system events: queued prompts,
hook reminders, its own compaction summaries, a sub-agent's system lines
(system events with a subtype or marked meta), as against the system
prompt and persona, which are always shown whole, and the standing
instructions a runtime writes again and again (AGENTS.md, user
instructions, environment context), whose newest copy of each kind is the
live one and is shown whole. Notices pile up as a session runs: the pack
shows the newest up to a cap, like notes, and compaction may evict the rest
(older instruction copies too) behind a marker."""
from __future__ import annotations

from reducers.event_kinds import SESSION_STATE
from reducers.pack_shrink import cut
from reducers.tokens import count_tokens

NOTICES_CAP = 2000                # the notes cap (continuity spec), for the runtime's notices too
INSTRUCTIONS = frozenset({"instructions", "user_instructions", "agents_md", "session_meta", "environment_context"})


def system_shown(events: list[dict], cap: int = NOTICES_CAP) -> list[dict]:
    """The system events a pack shows: none of what the runtime wrote about
    the session beside the conversation (SESSION_STATE: never sent to the
    model; its last prompt would come back as a system line), the system
    prompt and persona whole, the newest copy of each kind of standing
    instructions whole, the other notices newest first up to `cap` tokens,
    the first one cut to fit (pinned whole they outgrew any budget). The
    pack's pointer names the ones left out."""
    events = [e for e in events if _subtype(e) not in SESSION_STATE]
    live = {}
    for e in events:
        if _instructions(e):
            live[_subtype(e)] = e["seq"]               # the newest copy of each kind
    keep = set(live.values())
    # the main thread's before a sub-agent's, each newest first
    notices = sorted((e for e in events if is_notice(e) and not _instructions(e)),
                     key=lambda e: (bool((e.get("meta") or {}).get("sidechain")), -e["seq"]))
    used, first = 0, True
    for e in notices:
        if used + _cost(e) > cap and not first:
            continue
        keep.add(e["seq"])
        used, first = used + min(_cost(e), cap), False
    return [cut(e, cap) if e["seq"] in keep and _cost(e) > cap and not _instructions(e)
            else e for e in events if not is_notice(e) or e["seq"] in keep]


def _cost(e: dict) -> int:
    """One reading of a notice's size, for choosing it and for cutting it."""
    return e.get("tokens") or count_tokens(e["text"])


def _subtype(e: dict):
    return (e.get("meta") or {}).get("subtype")


def _instructions(e: dict) -> bool:
    """Standing instructions of the main thread (a sub-agent's are notices)."""
    return is_notice(e) and _subtype(e) in INSTRUCTIONS and not (e.get("meta") or {}).get("sidechain")


def is_notice(e: dict) -> bool:
    meta = e.get("meta") or {}
    return e["kind"] == "system" and bool(meta.get("subtype") or meta.get("is_meta") or meta.get("sidechain"))
