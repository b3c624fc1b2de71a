"""Tool runs and items only Codex's UI stream reports: the `*_end` events
of older rollouts and the `item_completed` items of paginated ones
(cli 0.147 on), which write no user_message / agent_message / *_end
events. Each mirrors a response_item (same call id, same text) when the
model's own record of it is in the file, and is then stored once; with
no such twin it is the only record, and becomes the drafts."""
from __future__ import annotations

from typing import Any, Iterator

from reducers.drafts import Draft
from reducers.formats.codex_rollout import Rollout, compaction, harness_draft, harness_kind, thinking, user_prompt
from reducers.formats.common import compact_json, flatten_content, tool_call_text


UI_TOOL_EVENTS = ("mcp_tool_call_end", "web_search_end", "exec_command_end", "patch_apply_end",
                  "image_generation_end")


def ui_tool(st: Rollout, p: dict, ptype: str) -> Iterator[Draft]:
    """A tool run as the UI stream reports it. It mirrors a response_item
    call (same call_id) and is then skipped — except a web search's results,
    which only this event holds. With no such call before it, it is the only
    record of the run: a call and its result."""
    call_id = p.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        return
    if ptype == "exec_command_end" and p.get("source") in ("user_shell", "user"):
        return                                          # the user's own `!cmd`: a <user_shell_command> message
    if ptype == "web_search_end":
        results = p.get("results") if isinstance(p.get("results"), list) else []
        text = "\n".join(search_hit(r) for r in results if isinstance(r, dict))
        if call_id in st.calls:
            if text and call_id not in st.searched:
                st.searched.add(call_id)
                yield st.draft("tool_result", text, tool={"name": st.calls[call_id], "call_id": call_id,
                                                          "is_error": False})
            return
        st.searched.add(call_id)
        yield from _run(st, call_id, "web_search", p.get("action") or {"query": p.get("query")}, text, False)
        return
    if call_id in st.calls:
        return
    if ptype == "mcp_tool_call_end":
        inv = p.get("invocation") if isinstance(p.get("invocation"), dict) else {}
        name = f"{inv.get('server')}.{inv.get('tool')}" if inv else "mcp"
        yield from _run(st, call_id, name, inv.get("arguments"), *_mcp_outcome(p.get("result")))
    elif ptype == "image_generation_end":
        yield from _run(st, call_id, "image_generation", {"revised_prompt": p.get("revised_prompt")},
                        _image_text(p), p.get("status") == "failed")
    elif ptype == "exec_command_end":
        yield from _run(st, call_id, "exec_command", {"command": p.get("command")}, *_exec_outcome(p))
    else:
        yield from _run(st, call_id, "apply_patch", _patch_args(p), *_patch_outcome(p))


def completed_item(st: Rollout, item: dict) -> Iterator[Draft]:
    """An `item_completed` event: in paginated rollouts the UI's only record
    of the user's prompt, the replies, reasoning and tool runs (the model's
    own response_items repeat them, and are matched as twins)."""
    itype = item.get("type") if isinstance(item.get("type"), str) else None
    if itype == "UserMessage":
        yield from _user_message(st, item)
    elif itype == "AgentMessage":
        fresh = [t for t in _item_texts(item.get("content")) if st.first_of_pair("assistant", t, "completed")]
        if fresh:
            phase = item.get("phase")
            yield st.draft("assistant", "\n".join(fresh), by_model=True,
                           meta={"phase": phase} if isinstance(phase, str) else None)
    elif itype == "Reasoning":
        parts = [t for k in ("summary_text", "raw_content") for t in _strings(item.get(k))]
        fresh = [t for t in parts if st.first_of_pair("reasoning", t, "completed")]
        if fresh:
            yield thinking(st, "\n\n".join(fresh))
    elif itype == "Plan":
        # plan mode's plan, as the reply that proposed it holds it (then not stored twice)
        text = item.get("text")
        if isinstance(text, str) and text.strip() and not st.said(text.strip()) \
                and st.first_of_pair("plan", text, "completed"):
            yield st.draft("assistant", text, by_model=True, meta={"subtype": "plan"})
    elif itype == "ContextCompaction":
        yield from compaction(st, None)
    elif itype == "SubAgentActivity":
        yield from _sub_agent(st, item)
    elif itype in _TOOL_ITEMS and not st.model_items:
        # Where the model's own records are in the file, they hold its calls
        # and what it read back; these items repeat them, or are the inner
        # runs of a code-mode script whose output the script's result holds.
        call_id = item.get("id")
        if isinstance(call_id, str) and call_id and call_id not in st.calls:
            yield from _run(st, call_id, *_TOOL_ITEMS[itype](item))
    # Extension, ImageView, hook and approval items: UI state, nothing the model read


def _user_message(st: Rollout, item: dict) -> Iterator[Draft]:
    content = item.get("content") if isinstance(item.get("content"), list) else []
    # as the response_item that mirrors it: the text parts one after another
    text = "".join(_item_texts(content))
    images = [b for b in content if isinstance(b, dict) and b.get("type") in ("image", "local_image")]
    kind = harness_kind(text)
    if kind:
        yield from harness_draft(st, text, kind, "completed")
    elif text or images:
        media = [{"type": "input_image", "image_url": b["image_url"]} if isinstance(b.get("image_url"), str)
                 else {"type": "input_image", "local_path": b.get("path")} for b in images]
        yield from user_prompt(st, text, len(images), "completed", {"images": len(images)} if images else None, media)


def _sub_agent(st: Rollout, item: dict) -> Iterator[Draft]:
    """Which thread a sub-agent runs in: the parent's link to the child's
    rollout (older versions report it as collab_* events)."""
    thread = item.get("agent_thread_id")
    activity = item.get("kind")
    if not isinstance(thread, str) or not thread or (thread, None) in st.linked or (thread, activity) in st.linked:
        return
    st.linked.add((thread, activity))
    path = item.get("agent_path")
    text = f"<sub_agent {activity} thread={thread}{' path=' + path if isinstance(path, str) and path else ''}>"
    call_id = item.get("id") if isinstance(item.get("id"), str) else None
    yield st.draft("system", text, meta={"subtype": "collab", "thread": thread, "call_id": call_id})


def _run(st: Rollout, call_id: str, name: str, args: Any, text: str, failed: bool) -> Iterator[Draft]:
    st.calls[call_id] = name
    yield st.draft("tool_call", tool_call_text(name, args), tool={"name": name, "call_id": call_id, "input": args},
                   by_model=True)
    yield st.draft("tool_result", text, 1, tool={"name": name, "call_id": call_id, "is_error": failed})


# -- what each kind of run did: (text, failed) --------------------------------------------

def _exec_outcome(p: dict) -> tuple[str, bool]:
    text = next((p[k] for k in ("formatted_output", "aggregated_output", "stdout")
                 if isinstance(p.get(k), str) and p[k]), "")
    code = p.get("exit_code")
    failed = (isinstance(code, int) and code != 0) or str(p.get("status", "")).lower() in ("failed", "declined")
    return text, failed


def _mcp_outcome(result: Any) -> tuple[str, bool]:
    ok = result.get("Ok") if isinstance(result, dict) and "Ok" in result else None
    body = ok if isinstance(ok, dict) else result
    text = flatten_content(body.get("content")) if isinstance(body, dict) and "content" in body \
        else compact_json(result)
    failed = not isinstance(body, dict) or "Err" in body or bool(body.get("isError") or body.get("is_error"))
    return text, failed


def _patch_args(p: dict) -> dict:
    changes = p.get("changes") if isinstance(p.get("changes"), dict) else {}
    return {"changes": sorted(changes)}


def _patch_outcome(p: dict) -> tuple[str, bool]:
    text = "".join(s for s in (p.get("stdout"), p.get("stderr")) if isinstance(s, str))
    failed = p.get("success") is False or str(p.get("status", "")).lower() in ("failed", "declined")
    return text, failed


def _image_text(p: dict) -> str:
    saved = p.get("saved_path")
    return f"[image] {saved}" if isinstance(saved, str) and saved else "[image]"


def _mcp_item(item: dict) -> tuple:
    name = ".".join(x for x in (item.get("server"), item.get("tool")) if isinstance(x, str) and x) or "mcp"
    error = item.get("error")
    if error:
        text = error if isinstance(error, str) else compact_json(error)
        return name, item.get("arguments"), text, True
    text, failed = _mcp_outcome(item.get("result"))
    return name, item.get("arguments"), text, failed or str(item.get("status", "")).lower() == "failed"


def _web_search_item(item: dict) -> tuple:
    action = item.get("action")
    args = action if isinstance(action, dict) else {"query": item.get("query")}
    results = item.get("results") if isinstance(item.get("results"), list) else []
    return "web_search", args, "\n".join(search_hit(r) for r in results if isinstance(r, dict)), False


_TOOL_ITEMS = {
    "CommandExecution": lambda item: ("exec_command", {"command": item.get("command")}, *_exec_outcome(item)),
    "McpToolCall": _mcp_item,
    "FileChange": lambda item: ("apply_patch", _patch_args(item), *_patch_outcome(item)),
    "WebSearch": _web_search_item,
    "ImageGeneration": lambda item: ("image_generation", {"revised_prompt": item.get("revised_prompt")},
                                     _image_text(item), str(item.get("status", "")).lower() == "failed"),
}


def _item_texts(content: Any) -> list[str]:
    """Text of an item's content ([{"type": "text" | "Text", "text"}, ...])."""
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"]
            and str(b.get("type", "text")).lower() == "text"]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def search_hit(r: dict) -> str:
    parts = [r.get("title"), f"<{r['url']}>" if isinstance(r.get("url"), str) else None, r.get("snippet")]
    return " ".join(s for s in parts if isinstance(s, str) and s)
