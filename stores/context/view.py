"""What one render reads of a session (reducers/render.py SessionView):
its markers, system and persona blocks, latest task states, newest notes,
each protected tool's latest state, and the uncovered conversation read
backwards from the newest event until it holds about READ_FACTOR budgets
— never the whole session, never the rest of the store. Whatever is left
unread is named, not read: the pack's elision marker points at it."""
from __future__ import annotations

from reducers.branches import RewoundLines, forked_lines, unplaced_prompts
from reducers.cache import Coverage, live_markers
from reducers.markers import pointer_of
from reducers.render import SessionView
from stores.context.reading import SessionReader
from stores.context.widen import widen_results

READ_FACTOR = 2                  # read about twice what fits: smart trim needs something to choose from
MIN_READ_TOKENS = 2000
NOTE_PAGE = 16
KIND_LIMIT = 100_000             # notes and task states are few; their seqs are read, their text only when shown
MAX_OVERRUN = 64                 # events read past the target while waiting for calls, at most
PROMPTS_READ = 1024              # a session's prompts read, newest first, to find forks older than the tail
REWOUND_READ = 4                 # a rewound branch (not shown) read past for the live history, up to this many targets
FIXED_KINDS = frozenset({"system", "persona", "task_state", "note", "marker"})


def read_view(store, ft, session_id: str, *, budget: int, tool_max_tokens: int, notes_cap: int,
              protected) -> SessionView:
    reader = SessionReader(store, ft, session_id)
    markers = [pointer_of(m) for m in live_markers(reader.read(reader.of_kinds(["marker"])))]
    coverage = Coverage(markers)
    view = SessionView(session_id, markers=markers)
    # a runtime notice compaction evicted is its marker's to name
    view.system = [e for e in reader.read(reader.of_kinds(["system", "persona"])) if e["seq"] not in coverage]
    tasks = reader.of_kinds(["task_state"], limit=KIND_LIMIT, newest_first=True)
    view.task_states = reader.read(tasks[:1])
    notes = reader.of_kinds(["note"], limit=KIND_LIMIT, newest_first=True)
    view.notes = _newest_notes(reader, notes, notes_cap)
    # Older task states and notes past the cap are not shown: the pack's
    # pointer names them, unless a logged marker points at them already.
    view.unread_seqs = {loc.seq for loc in tasks[1:] + notes[len(view.notes):] if loc.seq not in coverage}
    newest = reader.edge(newest=True)
    if newest is None:
        return view
    target = max(READ_FACTOR * budget, MIN_READ_TOKENS)
    conversation, unread = _tail(reader, coverage, newest, target, tool_max_tokens, RewoundLines(view.system))
    if unread is not None and unplaced_prompts(conversation):
        # A prompt that does not follow what was read before it may rewind to a point older
        # than the read: the session's prompts say where its forks are (then read again, past them).
        view.rewound = forked_lines([*view.system, *reader.read(reader.of_kinds(["user"], limit=PROMPTS_READ,
                                                                                 newest_first=True))])
        if view.rewound.spans:
            conversation, unread = _tail(reader, coverage, newest, target, tool_max_tokens, view.rewound)
    have = {e["seq"] for e in conversation}
    extra = [e for e in reader.read(reader.protected_state(protected)) if e["seq"] not in coverage]
    if unread is not None and not any(e["kind"] == "user" for e in conversation):
        # The current turn began before what was read: its prompt is still the pack's.
        extra += [e for e in reader.read(reader.of_kinds(["user"], limit=1, newest_first=True))
                  if e["seq"] not in coverage]
    conversation += [e for e in extra if e["seq"] not in have]
    conversation = sorted({e["seq"]: e for e in conversation}.values(), key=lambda e: e["seq"])
    view.conversation = widen_results(store, conversation, tool_max_tokens)
    view.unread_max = unread
    # Where the pack's own pointer may start: the oldest event no logged
    # marker covers (those have their pointers already).
    first = reader.edge(newest=False)
    uncovered = coverage.uncovered(first, newest) if first is not None else []
    view.first_seq = uncovered[-1][0] if uncovered else first
    return view


def _tail(reader: SessionReader, coverage: Coverage, newest: int, target: int,
          tool_max_tokens: int, rewound: RewoundLines | None = None) -> tuple[list[dict], int | None]:
    """Uncovered conversation events, newest first, until about `target`
    tokens as the pack would show them — and on until every result read has
    its call (a window never starts between a call and its result, or the
    newest pair could look like an orphan) — and the seq of the newest event
    left unread (None when nothing is)."""
    read: list[dict] = []
    tokens, waiting, overrun = 0, set(), 0
    # A rewound branch the pack leaves out does not fill it: read on past it (up to a
    # bound) for the live history before it.
    rewound, passed = rewound or RewoundLines(), 0
    for lo, hi in coverage.uncovered(0, newest):
        for page in reader.backwards(lo, hi):
            wanted = [loc for loc in page if loc.kind not in FIXED_KINDS]
            if not wanted:
                continue
            if tokens >= target and not waiting:
                return read, wanted[0].seq
            for i, e in enumerate(reader.read(wanted)):
                if tokens >= target and not waiting:
                    return read, wanted[i].seq
                read.append(e)
                cid = (e.get("tool") or {}).get("call_id")
                if e["kind"] == "tool_result":
                    waiting.add(cid)
                elif e["kind"] == "tool_call":
                    waiting.discard(cid)
                if tokens >= target:
                    overrun += 1
                    if overrun > MAX_OVERRUN:            # results whose calls are gone for good
                        waiting.clear()
                t = e.get("tokens") or 0
                t = (min(t, tool_max_tokens) if e["kind"] == "tool_result" else t) + 4
                rewound.learn(e)
                if rewound.holds(e) and passed < REWOUND_READ * target:
                    passed += t
                else:
                    tokens += t
    return read, None


def _newest_notes(reader: SessionReader, notes: list, cap: int) -> list[dict]:
    """Notes newest first, read until the cap is passed (older ones stay
    unread: they are recallable, and the pack's elision marker names them)."""
    out, used = [], 0
    for i in range(0, len(notes), NOTE_PAGE):
        for note in reader.read(notes[i:i + NOTE_PAGE]):
            if used > cap:
                return out
            out.append(note)
            used += note.get("tokens") or 0
    return out
