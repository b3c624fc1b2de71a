"""Where each Claude Code line sits in its conversation tree: the record it
follows (`parentUuid`; across a compaction, `logicalParentUuid`), written
as each event's `source.parent` ("" for a root: a line that follows none). A rewind or an edited prompt gives one
record two children; the pack renders the branch that goes on to the
newest record (reducers/branches.py).

The parent is named as an event of the log knows it: a line that made no
event (progress, a snapshot, a repeat) stands for its own parent, and a
line whose blocks all merged into the event before it (a streamed
message's later lines) stands for that event's line.

A typed prompt whose parent already has a typed prompt as its child is a
rewind (or an edited prompt): it carries `meta.rewinds: [first, line]`,
the source lines from that earlier prompt up to itself, which hold the
abandoned branch (what lies between them is no ancestor of it). An edit
of the very first prompt is a second root: a typed prompt with no parent
once the first root prompt has been replied to (files whose lines name
no parents at all, hand-made ones, stay a line). The pack
leaves those lines' events out however little of the session it reads;
the tree (source.parent) finds the forks a restarted parse cannot see."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from reducers.drafts import Draft, joins
from reducers.formats.claude_code_line import Line

_REMEMBERED = 65536             # stand-ins kept: a huge log parses in flat memory


class Tree:
    def __init__(self):
        self.stand_in: OrderedDict[str, str | None] = OrderedDict()   # line uuid -> the event uuid it stands for
        self.last: Draft | None = None                                # the newest draft made
        self.last_node: str | None = None                             # the uuid of the line that made it
        self.first_child: OrderedDict[str, tuple[int, bool]] = OrderedDict()  # node -> (line, a prompt?) of its first child
        self.root: tuple[str, int] | None = None                     # (uuid, line) of the first root prompt
        self.root_replied = False                                     # a line has named it as its parent

    def parent_of(self, rec: dict) -> str | None:
        for name in ("parentUuid", "logicalParentUuid"):
            raw = rec.get(name)
            if isinstance(raw, str) and raw:
                return self.stand_in.get(raw, raw)
        return None

    def pass_through(self, rec: dict) -> None:
        """A line that makes no event of the conversation."""
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid:
            self._stand(uuid, self.parent_of(rec))

    def place(self, rec: dict, at: Line, made: list[Any]) -> list[Any]:
        """The line's drafts with their parent set (only a line whose uuid
        is its own: a reused or missing one names no node of a tree)."""
        drafts = [d for d in made if isinstance(d, Draft)]
        if not drafts:
            self.pass_through(rec)
            return made
        own = at.uuid if at.uuid and at.rid == at.uuid else None
        parent = self.parent_of(rec)
        if own is not None and self.last_node is not None and all(
                joins(prev, d) for prev, d in zip([self.last, *drafts], drafts)):
            self._stand(own, self.last_node)
        else:
            self.last_node = own
        if own is not None:
            for d in drafts:
                d.parent = "" if parent is None else parent       # "": a root, the start of the conversation
            if self.last_node == own and not at.sidechain:
                if parent is not None:
                    self.root_replied = self.root_replied or (self.root is not None and parent == self.root[0])
                    self._child(parent, at, drafts)
                else:
                    self._root(own, at, drafts)
        self.last = drafts[-1]
        return made

    def _child(self, parent: str, at: Line, drafts: list[Draft]) -> None:
        prompt = any(d.kind == "user" and not (d.meta or {}).get("injected") for d in drafts)
        first = self.first_child.get(parent)
        if first is None:
            self.first_child[parent] = (at.line, prompt)
            if len(self.first_child) > _REMEMBERED:
                self.first_child.popitem(last=False)
        elif prompt and first[1] and first[0] < at.line:
            for d in drafts:
                d.meta = {**(d.meta or {}), "rewinds": [first[0], at.line]}

    def _root(self, own: str, at: Line, drafts: list[Draft]) -> None:
        if not any(d.kind == "user" and not (d.meta or {}).get("injected") for d in drafts):
            return
        if self.root is None:
            self.root = (own, at.line)
        elif self.root_replied and self.root[1] < at.line:
            for d in drafts:
                d.meta = {**(d.meta or {}), "rewinds": [self.root[1], at.line]}

    def _stand(self, uuid: str, for_uuid: str | None) -> None:
        self.stand_in[uuid] = for_uuid
        if len(self.stand_in) > _REMEMBERED:
            self.stand_in.popitem(last=False)
