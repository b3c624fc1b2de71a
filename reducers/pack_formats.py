"""A push pack in the shapes clients send: OpenAI chat messages, an
Anthropic Messages request (system + alternating user/assistant with
tool_use / tool_result blocks), plain text, or TRACE's own JSON."""
from __future__ import annotations

import orjson

from reducers.render import Pack


def _args_json(value) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value if value is not None else {}, default=str).decode()


def _input_object(value) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = orjson.loads(value)
            if isinstance(parsed, dict):
                return parsed
        except orjson.JSONDecodeError:
            pass
    return {"input": value}


def to_openai(pack: Pack) -> list[dict]:
    out = []
    for m in pack.messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append({"role": "assistant", "content": m.content or None,
                        "tool_calls": [{"id": c["id"], "type": "function",
                                        "function": {"name": c["name"], "arguments": _args_json(c["input"])}}
                                       for c in m.tool_calls]})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_anthropic(pack: Pack) -> dict:
    system = "\n\n".join(m.content for m in pack.messages if m.role == "system")
    messages: list[dict] = []

    def push(role: str, blocks: list[dict]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)        # roles must alternate
        else:
            messages.append({"role": role, "content": blocks})

    for m in pack.messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            push("user", [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}])
        elif m.role == "assistant":
            blocks = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": _input_object(c["input"])}
                       for c in m.tool_calls]
            push("assistant", blocks or [{"type": "text", "text": "(no content)"}])
        else:
            push("user", [{"type": "text", "text": m.content}])
    # (a pack opens with a user message: assemble() counts a lead-in line when its conversation does not)
    return {"system": system, "messages": messages}


def to_text(pack: Pack) -> str:
    parts = []
    for m in pack.messages:
        head = f"[{m.role}]" if m.part in ("conversation", "system") else f"[{m.role}: {m.part}]"
        body = m.content
        for c in m.tool_calls:
            body += f"\n→ {c['name']}({_args_json(c['input'])}) #{c['id']}"
        if m.role == "tool":
            head = f"[tool {m.name or ''} #{m.tool_call_id}]"
        parts.append(f"{head}\n{body}".rstrip())
    return "\n\n".join(parts) + "\n"


def to_json(pack: Pack, session_id: str, markers: list[dict], extra: dict | None = None) -> dict:
    return {"session_id": session_id, "budget": pack.budget, "tokens": pack.tokens,
            "messages": [{"role": m.role, "part": m.part, "content": m.content,
                          **({"tool_calls": m.tool_calls} if m.tool_calls else {}),
                          **({"tool_call_id": m.tool_call_id} if m.tool_call_id else {}),
                          "seqs": m.seqs, "tokens": m.tokens} for m in pack.messages],
            "markers": markers, "recalled": pack.recalled, "included": pack.included(),
            "elided": ({"ranges": [list(r) for r in pack.elision.ranges], "known_events": pack.elision.known}
                       if pack.elision else None),
            "cleared": pack.cleared, "shrunk": pack.shrunk, **(extra or {})}


PACK_FORMATS = ("openai", "anthropic", "text", "json")


def pack_in_format(pack: Pack, fmt: str, session_id: str, markers: list[dict], extra: dict | None = None):
    """The pack as `trace context --format` prints it: a str for text, else
    a JSON-ready value (`markers` and `extra` go into the json format)."""
    if fmt == "text":
        return to_text(pack)
    if fmt == "openai":
        return to_openai(pack)
    if fmt == "anthropic":
        return to_anthropic(pack)
    return to_json(pack, session_id, markers, extra)
