"""Which recall hits lie on an abandoned branch of their conversation (a
rewound or edited Claude Code prompt's old branch, a ChatGPT export's
alternate, messages a Gemini CLI rewind withdrew).

Recall finds them (they are in the log) and says so: each such hit is
marked `abandoned`. What injects hits as memory (the prompt hook, the
push pack's recalled-context block) leaves them out: that history never
happened for the conversation it was cut from.

A hit is judged by the prompts (and, in a source without a tree, the
notices) of its session around it (reducers/branches.py forked_lines):
up to AROUND before it (the prompt its branch began with) and after it
(the prompt that rewound from it), read through the full-text index, so
a query costs about the same however long the sessions it hits. A branch
holding more prompts than that around the hit is not recognised from
them (the pack still leaves its own session's out: it reads the tree)."""
from __future__ import annotations

from reducers.branches import NOTICE_REWIND_FORMATS, forked_lines, off_branch

AROUND = 8


def mark_abandoned(store, ft, hits: list) -> None:
    """Set `hit.abandoned` on the hits that lie on an abandoned branch."""
    placed: dict[str, list] = {}
    for hit in hits:
        source = hit.event.get("source")
        if (hit.event.get("meta") or {}).get("branch") == "alternate":
            hit.abandoned = True
        elif (type(source) is dict and type(source.get("line")) is int and type(source.get("path")) is str
              and _can_rewind(source)):
            placed.setdefault(hit.session_id, []).append(hit)
    if not placed:
        return
    from stores.context.reading import SessionReader
    for session_id, found in placed.items():
        reader = SessionReader(store, ft, session_id)
        near = {}
        for hit in found:
            # a tree's prompts name their parents; a source without a tree rewinds by a notice
            kinds = ["user"] if "parent" in hit.event["source"] else ["user", "system"]
            for loc in (reader.of_kinds(kinds, limit=AROUND, newest_first=True, hi=hit.seq)
                        + reader.of_kinds(kinds, limit=AROUND, lo=hit.seq + 1)):
                near.setdefault(loc.seq, loc)
        lines = forked_lines(reader.read(list(near.values())))
        for hit in found:
            hit.abandoned = bool(lines.spans) and off_branch(hit.event, lines)


def _can_rewind(source: dict) -> bool:
    """Whether the hit's source can have rewound from it: a tree's line
    names its parent; of the sources without a tree, only Gemini CLI says a
    rewind by a notice. Reading the prompts around every other hit would
    cost each query about twice its own time for nothing."""
    return "parent" in source or source.get("format") in NOTICE_REWIND_FORMATS
