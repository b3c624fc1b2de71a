"""Conversation events -> the messages of a push pack.

Consecutive assistant text joins one assistant message; a tool call joins
the assistant message before it (or opens one); each call's results follow
the assistant message that holds the call, before anything else, because
that is the only order every API accepts (OpenAI wants the tool messages
right after the call, Anthropic the tool_result blocks in the next user
turn). Results whose call is not among the events never get here:
`normalize_pairs` dropped them.

Token accounting: a message costs its content's tokens, its calls' names,
arguments and ids (each with CALL_OVERHEAD for its framing), a tool
result's call id and tool name, and MESSAGE_OVERHEAD for role and framing;
counts are kept until the content changes. The ids count because every
format sends them (OpenAI `tool_call_id`, Anthropic `tool_use_id`, the text
format's `#id`): an id like `toolu_01…` costs about 18 tokens, so leaving
them out put a pack with many tool pairs several percent over its budget."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reducers.tokens import count_tokens

MESSAGE_OVERHEAD = 4
# Anthropic's Messages API wants the first message from the user: a pack
# whose conversation opens with the assistant gets this user line first, as
# a message of the pack, so its tokens count against the budget.
LEAD_IN = "(earlier turns are in the log)"
CALL_OVERHEAD = 4                   # a call's framing inside its message: `→ name(…) #id`, or type/function keys


def args_text(value) -> str:
    if isinstance(value, str):
        return value
    import orjson
    return orjson.dumps(value, default=str).decode()


def call_tokens(call: dict) -> int:
    return (count_tokens(call.get("name") or "") + count_tokens(args_text(call.get("input")))
            + count_tokens(call.get("id") or "") + CALL_OVERHEAD)


def logged_call_tokens(tool: dict, arguments: Any) -> int:
    """A logged call's tokens (its event's `tool`: call_id and name) with
    `arguments` as its input: the input as logged, or a cut of it."""
    return call_tokens({"id": tool.get("call_id"), "name": tool.get("name"), "input": arguments})


def result_label_tokens(call_id: str | None, name: str | None) -> int:
    """What a tool result costs besides its content: the call id it answers
    and the tool's name."""
    return count_tokens(call_id or "") + count_tokens(name or "")


@dataclass
class Message:
    role: str                        # system | user | assistant | tool
    content: str
    tool_calls: list[dict] = field(default_factory=list)   # [{id, name, input}]
    tool_call_id: str | None = None
    name: str | None = None
    seqs: list[int] = field(default_factory=list)
    part: str = "conversation"       # system | task | notes | markers | recalled | conversation
    _counted: tuple = field(default=(None, -1, 0), repr=False, compare=False)

    @property
    def tokens(self) -> int:
        content, calls, n = self._counted
        if content is not self.content or calls != len(self.tool_calls):
            n = count_tokens(self.content) + sum(call_tokens(c) for c in self.tool_calls) + MESSAGE_OVERHEAD
            if self.role == "tool":
                n += result_label_tokens(self.tool_call_id, self.name)
            self._counted = (self.content, len(self.tool_calls), n)
        return n


def event_cost(e: dict) -> int:
    """An event's share of a pack, counted as if it were a message of its
    own (an upper bound on what it adds when it joins a message)."""
    tool = e.get("tool") or {}
    if e["kind"] == "tool_call":
        return logged_call_tokens(tool, tool.get("input")) + MESSAGE_OVERHEAD
    tokens = e.get("tokens")
    if tokens is None:
        tokens = count_tokens(e.get("text") or "")
    if e["kind"] == "tool_result":
        tokens += result_label_tokens(tool.get("call_id"), tool.get("name"))
    return tokens + MESSAGE_OVERHEAD


def build_messages(events: list[dict]) -> list[Message]:
    results_of: dict[int, list[dict]] = {}          # index of a call -> its results, in order
    last_call: dict = {}
    for i, e in enumerate(events):
        cid = (e.get("tool") or {}).get("call_id")
        if e["kind"] == "tool_call":
            last_call[cid] = i
        elif e["kind"] == "tool_result" and cid in last_call:
            results_of.setdefault(last_call[cid], []).append(e)
    msgs: list[Message] = []
    waiting: list[tuple[dict, str | None]] = []      # results of the open assistant message's calls, with the id sent
    sent_ids: set = set()

    def open_message(m: Message) -> None:
        flush()
        msgs.append(m)

    def flush() -> None:
        for r, call_id in waiting:
            tool = r.get("tool") or {}
            msgs.append(Message("tool", r["text"], tool_call_id=call_id, name=tool.get("name"),
                                seqs=[] if (r.get("meta") or {}).get("synthetic") else [r["seq"]]))
        waiting.clear()

    for i, e in enumerate(events):
        kind = e["kind"]
        if kind == "tool_result":
            continue                                 # placed after its call
        if kind == "user":
            open_message(Message("user", e["text"], seqs=[e["seq"]]))
        elif kind == "tool_call":
            tool = e.get("tool") or {}
            call = {"id": _unique_id(tool.get("call_id"), sent_ids), "name": tool.get("name"), "input": tool.get("input")}
            if not (msgs and msgs[-1].role == "assistant" and msgs[-1].part == "conversation"):
                open_message(Message("assistant", ""))
            msgs[-1].tool_calls.append(call)
            msgs[-1].seqs.append(e["seq"])
            waiting.extend((r, call["id"]) for r in results_of.get(i, ()))
        else:                                        # assistant text, artifact references
            last = msgs[-1] if msgs else None
            if last is not None and last.role == "assistant" and not last.tool_calls and not waiting:
                last.content = f"{last.content}\n\n{e['text']}".strip()
                last.seqs.append(e["seq"])
            else:
                open_message(Message("assistant", e["text"], seqs=[e["seq"]]))
    flush()
    return msgs


def _unique_id(call_id, sent: set):
    """The id a call is sent with: its own, or, when an earlier call in the
    pack already went with it (a reused or repeated id), the id with a
    suffix; Anthropic rejects a request whose tool_use ids repeat, and a
    repeated id leaves an OpenAI result ambiguous."""
    if not call_id:
        return call_id
    pack_id, n = call_id, 1
    while pack_id in sent:
        n += 1
        pack_id = f"{call_id}-{n}"
    sent.add(pack_id)
    return pack_id
