"""Hot-path write reconciliation (paper 8.3–8.6): ADD or NONE, never UPDATE
or DELETE (those need the downstream outcome and run only in the nightly
sweep). Consulted once per turn at the append chokepoint, deciding the
turn's events together so a turn's causal structure survives:

- a user message is never NONE (it carries intent);
- a tool call and its result are kept or dropped together;
- when the turn's user message would go, the whole turn goes (it cannot:
  user messages are protected, so a turn is only ever dropped whole when it
  has no user message and nothing in it is worth keeping).

`AddAll` is the default and ships on: a store with no reconciler configured
behaves exactly as a pure append-only log. `SizeAware` drops low-value
events only once the session's working store is over its token budget."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from reducers.drafts import Draft

ADD = "ADD"
NONE = "NONE"
PROTECTED_KINDS = frozenset({"user", "persona", "task_state", "note", "marker"})
DEFAULT_PROTECTED_TOOLS = frozenset({"TodoWrite", "manage_todo_list"})
_NOISE_META = ("attachment", "is_meta")


@dataclass(slots=True)
class WorkingSet:
    """What the reconciler may know about the store: the session's stored
    tokens and digests of recent tool outputs (to spot verbatim repeats)."""
    tokens: int = 0
    recent_outputs: set[str] = field(default_factory=set)


class AddAll:
    name = "add-all"
    uses_working_set = False

    def decide_turn(self, turn: list[Draft], working: WorkingSet) -> list[str]:
        return [ADD] * len(turn)


def output_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class SizeAware:
    name = "size"
    uses_working_set = True

    def __init__(self, budget_tokens: int, protected_tools=DEFAULT_PROTECTED_TOOLS):
        self.budget_tokens = budget_tokens
        self.protected_tools = frozenset(protected_tools)

    def decide_turn(self, turn: list[Draft], working: WorkingSet) -> list[str]:
        if working.tokens <= self.budget_tokens:
            return [ADD] * len(turn)
        decisions = [NONE if self._low_value(d, working) else ADD for d in turn]
        return _keep_pairs_together(turn, decisions)

    def _low_value(self, d: Draft, working: WorkingSet) -> bool:
        if d.kind in PROTECTED_KINDS or d.artifact is not None:
            return False
        if d.tool and d.tool.get("name") in self.protected_tools:
            return False
        if not d.text.strip():
            return True
        if d.kind == "system" and d.meta and any(d.meta.get(k) for k in _NOISE_META):
            return True
        if d.kind == "tool_result" and not (d.tool or {}).get("is_error"):
            return output_digest(d.text) in working.recent_outputs
        return d.kind == "tool_call"   # a call is low-value only if its result is (see below)


def _keep_pairs_together(turn: list[Draft], decisions: list[str]) -> list[str]:
    """A call is dropped only with its result, and a result only with its
    call; a call whose result is not in this turn is kept."""
    by_call: dict[str, list[int]] = {}
    for i, d in enumerate(turn):
        if d.kind in ("tool_call", "tool_result") and d.tool and d.tool.get("call_id"):
            by_call.setdefault(d.tool["call_id"], []).append(i)
    out = list(decisions)
    for i, d in enumerate(turn):
        if d.kind not in ("tool_call", "tool_result"):
            continue
        members = by_call.get((d.tool or {}).get("call_id") or "", [i])
        kinds = {turn[j].kind for j in members}
        whole_pair_low = kinds == {"tool_call", "tool_result"} and all(decisions[j] == NONE for j in members)
        out[i] = NONE if whole_pair_low else ADD
    return out
