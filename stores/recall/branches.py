"""Which recall hits lie on an abandoned branch of their conversation (a
rewound or edited Claude Code prompt's old branch, a ChatGPT export's
alternate, messages a Gemini CLI rewind withdrew).

Recall finds them (they are in the log) and says so: each such hit is
marked `abandoned`. What injects hits as memory (the prompt hook, the
push pack's recalled-context block) leaves them out: that history never
happened for the conversation it was cut from.

A hit is judged by its session's prompts and notices (reducers/branches.py
forked_lines), read through the full-text index: only the sessions hits
come from, at most PROMPTS_READ events each, newest first."""
from __future__ import annotations

from reducers.branches import forked_lines, off_branch

PROMPTS_READ = 2048


def mark_abandoned(store, ft, hits: list) -> None:
    """Set `hit.abandoned` on the hits that lie on an abandoned branch."""
    placed = {}
    for hit in hits:
        source = hit.event.get("source")
        if (hit.event.get("meta") or {}).get("branch") == "alternate":
            hit.abandoned = True
        elif type(source) is dict and type(source.get("line")) is int and type(source.get("path")) is str:
            placed.setdefault(hit.session_id, []).append(hit)
    if not placed:
        return
    from stores.context.reading import SessionReader
    for session_id, found in placed.items():
        reader = SessionReader(store, ft, session_id)
        lines = forked_lines(reader.read(reader.of_kinds(["user", "system"], limit=PROMPTS_READ, newest_first=True)))
        if not lines.spans:
            continue
        for hit in found:
            hit.abandoned = off_branch(hit.event, lines)
