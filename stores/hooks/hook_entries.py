"""The hooks block both Claude Code (settings.json) and Codex (hooks.json)
read — `{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type": "command",
"command", "timeout"}]}]}}` — edited as text (json_text) so everything else
keeps its bytes. Our handlers are recognised by their command (`… hooks run
--agent AGENT …`): install adds each once, uninstall removes exactly them,
and the groups, event lists and `hooks` object they alone filled."""
from __future__ import annotations

import re
from dataclasses import dataclass

from reducers.json_kinds import a_json_kind
from stores.errors import TraceError
from stores.hooks.json_text import JsonText


@dataclass(frozen=True)
class Wanted:
    event: str
    command: str
    matcher: str | None = None
    timeout: int = 30


def ours(agent: str):
    signature = re.compile(rf"\bhooks run --agent {re.escape(agent)}\b")
    return lambda command: isinstance(command, str) and bool(signature.search(command))


def _handlers(doc: JsonText):
    """(event, group index, handler index, matcher, command) of every command handler."""
    hooks = doc.value.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for gi, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            for hi, handler in enumerate(group["hooks"]):
                if isinstance(handler, dict):
                    yield event, gi, hi, group.get("matcher"), handler.get("command")


def add_hooks(doc: JsonText, wanted: list[Wanted], is_ours) -> JsonText:
    """Make TRACE's handlers exactly `wanted`: ours that differ (a moved
    venv, other options, an event no longer wanted) go, missing ones come."""
    _check_shape(doc, {w.event for w in wanted})
    target = {(w.event, w.matcher, w.command) for w in wanted}
    doc = _remove(doc, lambda e, m, c: is_ours(c) and (e, m or None, c) not in target)
    present = {(e, m or None, c) for e, _, _, m, c in _handlers(doc) if is_ours(c)}
    for w in wanted:
        if (w.event, w.matcher, w.command) in present:
            continue
        if not isinstance(doc.value.get("hooks"), dict):
            doc = doc.add_member(doc.root, "hooks", {})
        group = ({"matcher": w.matcher} if w.matcher is not None else {})
        group["hooks"] = [{"type": "command", "command": w.command, "timeout": w.timeout}]
        groups = doc.node("hooks", w.event)
        if groups is None or groups.kind != "array":
            doc = doc.add_member(doc.node("hooks"), w.event, [group])
        else:
            doc = doc.insert_item(groups, group)
    return doc


def _check_shape(doc: JsonText, events: set[str]) -> None:
    """Refuse a `hooks` that is not an object, or an event's entry that is
    not a list: adding beside it would write a second member of the same
    name, which the agent reads in place of the first (ours unseen), and
    replacing it would lose what the user wrote."""
    node = doc.node("hooks")
    if node is not None and node.kind != "object":
        raise TraceError(f"{doc.name}:{doc.line_of(node)}: `hooks` is {a_json_kind(doc.value['hooks'])}, not an "
                         f"object; fix or remove it, then run the command again (nothing was written)")
    for event in sorted(events):
        groups = doc.node("hooks", event)
        if groups is not None and groups.kind != "array":
            raise TraceError(f"{doc.name}:{doc.line_of(groups)}: `hooks.{event}` is "
                             f"{a_json_kind(doc.value['hooks'][event])}, not a list; fix or remove it, then run the "
                             f"command again (nothing was written)")


def remove_hooks(doc: JsonText, is_ours) -> JsonText:
    return _remove(doc, lambda e, m, c: is_ours(c))


def _remove(doc: JsonText, doomed) -> JsonText:
    while True:
        target = next(((e, gi, hi) for e, gi, hi, m, c in _handlers(doc) if doomed(e, m, c)), None)
        if target is None:
            return doc
        event, gi, hi = target
        group = doc.value["hooks"][event][gi]
        if len(group["hooks"]) > 1:
            doc = doc.remove_item(doc.node("hooks", event, gi, "hooks"), hi)
        elif len(doc.value["hooks"][event]) > 1:
            doc = doc.remove_item(doc.node("hooks", event), gi)
        elif len(doc.value["hooks"]) > 1:
            doc = doc.remove_member(doc.node("hooks"), event)
        else:
            doc = doc.remove_member(doc.root, "hooks")
