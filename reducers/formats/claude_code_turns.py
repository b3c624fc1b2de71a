"""Which turn a Claude Code line belongs to. A turn starts at a user's
typed message; a sub-agent (sidechain) line belongs to the turn of the
prompt that started its agent, found through its `parentUuid` chain or its
`agentId`, and never moves the main conversation's turn (the sub-agent's
Task result still belongs to the main turn)."""
from __future__ import annotations

from collections import OrderedDict

from reducers.formats.claude_code_line import Line

_SIDE_LINES = 200_000        # sidechain line uuids remembered for their turn


class Turns:
    def __init__(self) -> None:
        self.session: str | None = None                           # the session main_turn is of
        self.main_turn = ""
        self.side_turns: OrderedDict[str, str] = OrderedDict()    # "<session>\0<uuid>" of sidechain lines -> turn
        self.agent_turns: dict[str, str] = {}                     # "<session>\0<agentId>" -> its latest turn

    def of(self, rec: dict, sid: str, sidechain: bool) -> str:
        """The turn of a line of session `sid`."""
        if self.session != sid:
            self.session, self.main_turn = sid, f"{sid}/start"
        if not sidechain:
            return self.main_turn
        parent = rec.get("parentUuid")
        agent = rec.get("agentId")
        return (self.side_turns.get(f"{sid}\0{parent}") if isinstance(parent, str) else None) \
            or (self.agent_turns.get(f"{sid}\0{agent}") if isinstance(agent, str) else None) \
            or self.main_turn

    def start(self, at: Line, rec: dict) -> None:
        """A typed prompt (the user's, or a sub-agent's) starts a turn at its line."""
        at.turn = f"{at.session_id}/{at.rid}"
        if not at.sidechain:
            self.main_turn = at.turn
        elif isinstance(rec.get("agentId"), str):
            self.agent_turns[f"{at.session_id}\0{rec['agentId']}"] = at.turn

    def remember(self, at: Line) -> None:
        """A sidechain line's children (by parentUuid) share its turn."""
        if at.sidechain and at.uuid:
            self._set(f"{at.session_id}\0{at.uuid}", at.turn)

    def pass_through(self, rec: dict, sid: str | None) -> None:
        """A skipped sidechain line (progress...) can sit in a sub-agent's
        parentUuid chain: its children inherit the turn through it."""
        if rec.get("isSidechain") is not True or not isinstance(rec.get("uuid"), str):
            return
        turn = self.side_turns.get(f"{sid}\0{rec.get('parentUuid')}")
        if turn:
            self._set(f"{sid}\0{rec['uuid']}", turn)

    def _set(self, key: str, turn: str) -> None:
        self.side_turns[key] = turn
        if len(self.side_turns) > _SIDE_LINES:
            self.side_turns.popitem(last=False)
