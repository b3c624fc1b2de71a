"""Codex tool calls and their outputs as the model saw them (response
items: function, custom, shell, search and image calls, paired by
`call_id`), and the id-less `tool_call` / `tool_result` layout some
exporters write. An output's exit code and failure are read from its text."""
from __future__ import annotations

import re
from typing import Any, Iterator

import orjson

from reducers.drafts import Draft
from reducers.formats.codex_rollout import Rollout
from reducers.formats.common import compact_json, flatten_content, media_blocks, tool_call_text

# Calls whose item carries no name
_CALL_NAMES = {"local_shell_call": "local_shell", "tool_search_call": "tool_search",
               "web_search_call": "web_search", "image_generation_call": "image_generation"}
_EXIT_PATTERNS = (
    re.compile(r"\AExit code: (-?\d+)"),                               # shell tool, newer versions
    re.compile(r"^Process exited with code (-?\d+)$", re.M),           # unified exec
    re.compile(r"\Afailed in sandbox .*?exit code: (-?\d+)", re.S),    # sandbox denial (0.40)
)
_FAILURE_PREFIXES = ("failed in sandbox", "execution error", "exec command rejected", "patch rejected",
                     "Script failed")                              # code mode's exec tool


def model_call(st: Rollout, p: dict, ptype: str) -> Iterator[Draft]:
    name = p.get("name") if isinstance(p.get("name"), str) else _CALL_NAMES.get(ptype, ptype[:-len("_call")])
    call_id = _call_id(st, p)
    if ptype == "custom_tool_call":
        args = p.get("input")
    elif ptype in ("local_shell_call", "web_search_call"):
        args = p.get("action")
    elif ptype == "image_generation_call":
        args = {"revised_prompt": p.get("revised_prompt")}
    else:
        args = p.get("arguments", p.get("input"))
    st.calls[call_id] = name
    meta = {"namespace": p["namespace"]} if isinstance(p.get("namespace"), str) and p["namespace"] else None
    yield st.draft("tool_call", tool_call_text(name, args), tool={"name": name, "call_id": call_id,
                                                                  "input": _parsed(args)},
                   meta=meta, by_model=True)
    if ptype == "image_generation_call":               # the call item also holds its result: an image
        failed = p.get("status") == "failed"
        yield st.draft("tool_result", "[image]", 1, tool={"name": name, "call_id": call_id, "is_error": failed},
                       media=[p] if p.get("result") else None)


def model_output(st: Rollout, p: dict, ptype: str) -> Draft:
    call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
    name = p.get("name") if isinstance(p.get("name"), str) else st.calls.get(call_id)
    output = p.get("tools") if ptype == "tool_search_output" else p.get("output")
    meta: dict = {}
    failed = p.get("status") == "failed"
    if ptype == "tool_search_output":
        text = compact_json(output)
    else:
        # verbatim: the model saw this very string, or these text parts one after another
        text = output if isinstance(output, str) else _joined_parts(output)
        if isinstance(output, dict) and output.get("success") is False:
            failed = True
        code, said_failed = _outcome(text)
        if code is not None:
            meta["exit_code"] = code
        failed = failed or said_failed
    return st.draft("tool_result", text, tool={"name": name, "call_id": call_id, "is_error": failed}, meta=meta,
                    media=media_blocks(output))


def _joined_parts(output: Any) -> str:
    """A list of text parts (code mode's "Script completed\nOutput:\n", then
    the output) reads as one text: a newline goes between two parts only
    when the first does not already end a line."""
    if not (isinstance(output, list) and output and all(
            isinstance(b, dict) and b.get("type") in ("input_text", "output_text", "text") and isinstance(b.get("text"), str)
            for b in output)):
        return flatten_content(output)
    text = ""
    for block in output:
        if text and not text.endswith("\n"):
            text += "\n"
        text += block["text"]
    return text


def _outcome(output: str) -> tuple[int | None, bool]:
    """(exit code, failed) as the output text states them. Older Codex wraps
    shell output as a JSON string {"output", "metadata": {"exit_code"}}."""
    if output.startswith("{"):
        try:
            data = orjson.loads(output)
        except orjson.JSONDecodeError:
            data = None
        md = data.get("metadata") if isinstance(data, dict) else None
        if isinstance(md, dict) and isinstance(md.get("exit_code"), int):
            return md["exit_code"], md["exit_code"] != 0
    head = output[:2000]
    for pattern in _EXIT_PATTERNS:
        m = pattern.search(head)
        if m:
            return int(m.group(1)), int(m.group(1)) != 0 or head.startswith(_FAILURE_PREFIXES)
    return None, head.startswith(_FAILURE_PREFIXES)


def _parsed(args: Any) -> Any:
    if isinstance(args, str) and args[:1] in ("{", "["):
        try:
            return orjson.loads(args)
        except orjson.JSONDecodeError:
            pass
    return args


def _call_id(st: Rollout, p: dict) -> str:
    for key in ("call_id", "id"):
        if isinstance(p.get(key), str) and p[key]:
            return p[key]
    return f"codex-L{st.line}"                         # id-less: unique within the file, stable as it grows


def legacy_call(st: Rollout, p: dict) -> Draft:
    """{"type": "tool_call", "function": {"name"}, "arguments"}: an id-less
    layout some exporters write; its result is the next tool_result."""
    fn = p.get("function") if isinstance(p.get("function"), dict) else {}
    name = fn.get("name") or p.get("name")
    name = name if isinstance(name, str) else None
    call_id = _call_id(st, p)
    st.calls[call_id], st.idless_call = name, call_id
    args = p.get("arguments", fn.get("arguments"))
    return st.draft("tool_call", tool_call_text(name, args), tool={"name": name, "call_id": call_id,
                                                                   "input": _parsed(args)}, by_model=True)


def legacy_result(st: Rollout, p: dict) -> Draft:
    call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else st.idless_call
    st.idless_call = None
    result = p.get("result", p.get("output"))
    failed = False
    if isinstance(result, dict):
        code = result.get("exitCode", result.get("exit_code"))
        failed = (isinstance(code, int) and code != 0) or bool(result.get("isError") or result.get("is_error"))
    name = p.get("name") if isinstance(p.get("name"), str) else st.calls.get(call_id)
    return st.draft("tool_result", result if isinstance(result, str) else compact_json(result),
                    tool={"name": name, "call_id": call_id, "is_error": failed})
