"""Which logged events lie on an abandoned branch of their conversation.

A source that keeps its conversation as a tree (Claude Code: each record
names the one it follows, `source.parent`) forks when the user rewinds or
edits an earlier prompt: the record before it gets a second child. The
conversation the model is in is the branch that goes on to the newest
record; the other children, and everything under them, are history that
never happened for it. The log keeps them (lossless); a pack leaves them
out and its pointer names them.

Only a fork the user made counts: both children must be prompts the user
typed (parallel tool results, sub-agent lines, hook output, an interrupted
call's result sharing a parent are not a rewind). An edited first prompt
is a second root prompt: the roots fork from the start once the first one
has a child (in a file whose lines name no parents, roots are no fork). The reader also marks
the prompt that rewinds with the source lines of the branch it left
(`meta.rewinds`): that finds the branch when only its end was read, its
fork being older than what a small pack reads. Events without `source.parent`
(stores ingested before it was recorded) are linear, as they always were.

Two formats say which branch is live themselves: a ChatGPT export marks
each message off its `current_node` branch `meta.branch: "alternate"`,
and Gemini CLI logs `$rewindTo` as a `rewind` notice naming the first
message it withdrew (that message and every one after it, up to the
notice, are gone from the model's history); the notice carries the
withdrawn lines as `meta.rewinds` too, when the reader saw them."""
from __future__ import annotations

from collections import defaultdict

# Sources without a tree that say a rewind by a notice (meta.rewinds): the
# name reducers/formats/gemini_cli.py gives its events' source.format. Named
# here, not imported, so a plain recall never loads the ingest readers.
NOTICE_REWIND_FORMATS = frozenset({"gemini-cli"})


def tree_edge(e: dict) -> tuple[str, str | None] | None:
    """(node, parent) of an event that takes part in a tree, else None
    (parent "": a root the reader placed; None: not known)."""
    source = e.get("source")
    if type(source) is not dict or (e.get("meta") or {}).get("sidechain"):
        return None
    node = source.get("uuid")
    if type(node) is not str or not node:
        return None
    parent = source.get("parent")
    return node, parent if type(parent) is str else None


def _typed(e: dict) -> bool:
    """A prompt the user typed (not a notice the harness wrote as the user)."""
    return e["kind"] == "user" and not (e.get("meta") or {}).get("injected")


def abandoned_seqs(events: list[dict]) -> set[int]:
    """The seqs of the events (any order; one session's) that lie on an
    abandoned branch."""
    declared = _off_the_declared_path(events)
    tree = _off_the_tree(events) if declared is None else declared
    return tree | _rewound_lines(events) | _alternates(events, declared is not None) | _withdrawn(events)


class RewoundLines:
    """The source lines rewinding prompts left (`meta.rewinds`), per source
    file; learnt from events as they are read."""

    def __init__(self, events: list[dict] = ()):
        self.spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for e in events:
            self.learn(e)

    def learn(self, e: dict) -> None:
        span = (e.get("meta") or {}).get("rewinds")
        path = e["source"].get("path") if type(e.get("source")) is dict else None
        if type(path) is str and type(span) is list and len(span) == 2 and all(type(n) is int for n in span):
            self.spans[path].append((span[0], span[1]))

    def holds(self, e: dict) -> bool:
        """Whether the event is of the main conversation on lines a rewind left."""
        source = e.get("source")
        if not self.spans or type(source) is not dict or (e.get("meta") or {}).get("sidechain"):
            return False
        line = source.get("line")
        return type(line) is int and any(a <= line < b for a, b in self.spans.get(source.get("path"), ()))


def off_branch(event: dict, rewound: RewoundLines) -> bool:
    """Whether one event, met alone (a recall hit), lies on a branch the
    rewinds known to `rewound`, or its source, say was left."""
    return (event.get("meta") or {}).get("branch") == "alternate" or rewound.holds(event)


def forked_lines(events: list[dict]) -> RewoundLines:
    """The lines a session's rewinds left, known from its prompts and
    notices alone (recall meets a hit alone, without the tree around it):
    what rewinding prompts and notices name (`meta.rewinds`), and the span
    from the first typed prompt under a record to a later one under the
    same record (a rewind parsed in a later run than the branch it left:
    the reader could not mark it). An edited first prompt counts only as
    the reader marked it (two roots alone may be a hand-made file)."""
    lines = RewoundLines(events)
    first: dict[tuple[str, str], int] = {}
    for e in sorted(events, key=lambda e: e["seq"]):
        source = e.get("source")
        if not _typed(e) or type(source) is not dict or (e.get("meta") or {}).get("sidechain"):
            continue
        path, parent, line = source.get("path"), source.get("parent"), source.get("line")
        if type(path) is not str or type(parent) is not str or not parent or type(line) is not int:
            continue
        start = first.setdefault((path, parent), line)
        if start < line:
            lines.spans[path].append((start, line))
    return lines


def unplaced_prompts(events: list[dict]) -> bool:
    """Whether a typed prompt among `events` (seq order) names a parent
    other than the event of the conversation just before it: it may
    rewind to a fork older than what was read."""
    before: str | None = None
    for e in events:
        edge = tree_edge(e)
        if edge is None:
            continue
        if before is not None and _typed(e) and edge[1] and edge[1] != before:     # (a root is no rewind to read for)
            return True
        before = edge[0]
    return False


def _rewound_lines(events: list[dict]) -> set[int]:
    lines = RewoundLines(events)
    return {e["seq"] for e in events if lines.holds(e)} if lines.spans else set()


def _alternates(events: list[dict], declared: bool) -> set[int]:
    """Events the reader marked off the current branch (with a declared
    leaf, only those logged without their parent: stores from before)."""
    return {e["seq"] for e in events if (e.get("meta") or {}).get("branch") == "alternate"
            and not (declared and "parent" in (e.get("source") or {}))}


def _off_the_declared_path(events: list[dict]) -> set[int] | None:
    """With a leaf the source declared live (`meta.live_leaf`; the newest
    one): the events with a parent that are not on the path up from it; None
    without one. The path is walked through the events given; where it
    leaves them (an ancestor not read), only events newer than where it
    stopped are known to be off it (an ancestor is older than its child);
    the older ones are taken as the reader marked them."""
    leaves = [e for e in events if (e.get("meta") or {}).get("live_leaf") and tree_edge(e) is not None]
    if not leaves:
        return None
    parent_of: dict[str, str | None] = {}
    oldest: dict[str, int] = {}
    for e in events:
        edge = tree_edge(e)
        if edge is not None:
            parent_of.setdefault(edge[0], edge[1])
            oldest[edge[0]] = min(oldest.get(edge[0], e["seq"]), e["seq"])
    node: str | None = tree_edge(max(leaves, key=lambda e: e["seq"]))[0]
    live: set[str] = set()
    while node is not None and node in parent_of and node not in live:
        live.add(node)
        node = parent_of[node]
    # Stopped at a node no event read stands for: the tree's root, or an ancestor older than
    # what was read. Past the oldest node reached, the reader's own marks stand.
    # A child of a node on the path (or of where it stopped) that is not on it is off it, however old.
    known_from = 0 if node is None else min(oldest[n] for n in live)
    forks = live | {node}
    return {e["seq"] for e in events if (edge := tree_edge(e)) is not None and edge[1] is not None
            and edge[0] not in live
            and (e["seq"] > known_from or edge[1] in forks or (e.get("meta") or {}).get("branch") == "alternate")}


def _withdrawn(events: list[dict]) -> set[int]:
    """Events a rewind notice withdrew: from the first event of the message
    it names to the notice. A target not among `events` names nothing
    (never a guess at where it began)."""
    rewinds = [(e["seq"], (e.get("meta") or {}).get("rewind_to")) for e in events
               if e["kind"] == "system" and (e.get("meta") or {}).get("subtype") == "rewind"]
    rewinds = [(seq, target) for seq, target in rewinds if type(target) is str and target]
    if not rewinds:
        return set()
    first: dict[str, int] = {}
    for e in events:
        uuid = e["source"].get("uuid") if type(e.get("source")) is dict else None
        if type(uuid) is str and (uuid not in first or e["seq"] < first[uuid]):
            first[uuid] = e["seq"]
    out: set[int] = set()
    for seq, target in rewinds:
        start = first.get(target)
        if start is not None and start < seq:
            out.update(e["seq"] for e in events if start <= e["seq"] < seq)
    return out


def _off_the_tree(events: list[dict]) -> set[int]:
    """The events under a rewound fork's losing children."""
    nodes: dict[str, list[dict]] = defaultdict(list)
    parent_of: dict[str, str] = {}
    for e in events:
        edge = tree_edge(e)
        if edge is None:
            continue
        node, parent = edge
        nodes[node].append(e)
        if parent is not None and parent != node:
            parent_of.setdefault(node, parent)
    if not parent_of:
        return set()
    children: dict[str, list[str]] = defaultdict(list)
    for node, parent in parent_of.items():
        children[parent].append(node)
    forks = {p: kids for p, kids in children.items() if len(kids) > 1}
    # the roots (parent "": the start) fork only once the first root prompt has a reply
    first_root = min((k for k in forks.get("", ()) if any(_typed(e) for e in nodes[k])),
                     key=lambda k: min(e["seq"] for e in nodes[k]), default=None)
    if first_root is not None and first_root not in children:
        del forks[""]
    if not forks:
        return set()
    newest = _newest_under(nodes, children)
    lost: list[str] = []
    for kids in forks.values():
        prompts = [k for k in kids if any(_typed(e) for e in nodes[k])]
        live = max(kids, key=lambda k: newest[k])
        if live in prompts:
            lost += [k for k in prompts if k != live]
    out: set[int] = set()
    seen: set[str] = set()
    while lost:
        node = lost.pop()
        if node in seen:
            continue
        seen.add(node)
        out.update(e["seq"] for e in nodes[node])
        lost += children.get(node, ())
    return out


def _newest_under(nodes: dict[str, list[dict]], children: dict[str, list[str]]) -> dict[str, int]:
    """Each node's newest seq, its descendants' included (iteratively: a
    tree may be thousands deep)."""
    newest: dict[str, int] = {n: max(e["seq"] for e in evs) for n, evs in nodes.items()}
    order: list[str] = []
    stack = [n for n in nodes]
    state: dict[str, int] = {}
    while stack:
        n = stack.pop()
        if state.get(n) == 2:
            continue
        if state.get(n) == 1:
            state[n] = 2
            order.append(n)
            continue
        state[n] = 1
        stack.append(n)
        stack += [c for c in children.get(n, ()) if state.get(c) is None]
    for n in order:                              # children before parents
        for c in children.get(n, ()):
            newest[n] = max(newest.get(n, 0), newest.get(c, 0))
    return newest
