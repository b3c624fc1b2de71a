"""Which record of the `openai` format is which: a chat message, a
conversation record (messages, history, simulations), a Batch API input or
output line, a reply saved on its own. reducers/formats/openai.py reads
them; its sniff counts the records `is_mine` claims."""
from __future__ import annotations

from typing import Any

from reducers.formats.chatgpt_export import is_export
from reducers.formats.http_capture import exchange_body, record_list
from reducers.formats.openai_responses import is_response_object, is_responses_body, is_saved_response

ROLES = ("system", "developer", "user", "assistant", "tool", "function", "ipython")   # ipython: Llama's tool output
_CONVERSATION_KEYS = ("messages", "history")
# Request bodies that carry `input` but no conversation (Batch API endpoints and lookalikes).
_NOT_CONVERSATION_URLS = ("/v1/embeddings", "/v1/moderations", "/v1/completions")


def is_message(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("role") in ROLES
            and any(k in value for k in ("content", "tool_calls", "toolCalls", "function_call")))


def is_completion(rec: Any) -> bool:
    """A reply saved on its own, without its request: a chat.completion, or
    an Ollama /api/chat reply ({"model", "message", "done"})."""
    return isinstance(rec, dict) and ((rec.get("object") == "chat.completion" and isinstance(rec.get("choices"), list))
                                      or envelope_reply(rec) is not None)


def record_array(rec: Any) -> bool:
    """A JSON array of whole records: conversations, or replies saved alone."""
    return record_list(rec) or (isinstance(rec, list) and bool(rec)
                                and all(is_completion(r) or is_saved_response(r) for r in rec))


def envelope_reply(response: Any) -> dict | None:
    """The assistant message an Ollama /api/chat reply holds under `message`."""
    if isinstance(response, dict) and "done" in response and "role" not in response and "content" not in response:
        message = response.get("message")
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            return message
    return None


def conversation_list(rec: dict) -> list | None:
    for k in _CONVERSATION_KEYS:
        if isinstance(rec.get(k), list):
            return rec[k]
    return thread_messages(rec)


def thread_messages(rec: dict) -> list | None:
    """The messages of an Assistants API thread as its list endpoint returns
    them ({"object": "list", "data": [thread.message...]}, newest first by
    default), oldest first: the order they were said in."""
    data = rec.get("data")
    if rec.get("object") != "list" or not isinstance(data, list) or not any(
            isinstance(m, dict) and m.get("object") == "thread.message" for m in data[:50]):
        return None
    def said_at(m: Any) -> float:
        t = m.get("created_at") if isinstance(m, dict) else None
        return t if isinstance(t, (int, float)) and not isinstance(t, bool) else 0
    return sorted(data, key=said_at)


def batch_request_body(rec: Any) -> dict | None:
    """The request body of a Batch API input line, when it holds a conversation."""
    if not (isinstance(rec, dict) and "custom_id" in rec and isinstance(rec.get("body"), dict)):
        return None
    url = rec.get("url")
    if isinstance(url, str) and url.rstrip("/").endswith(_NOT_CONVERSATION_URLS):
        return None
    body = rec["body"]
    if isinstance(body.get("messages"), list) or (is_responses_body(body)
                                                  or (isinstance(body.get("input"), str) and url == "/v1/responses")):
        return body
    return None


def is_batch_output(rec: Any) -> bool:
    """A Batch API output (or error file) line: what came back for one custom_id."""
    if not (isinstance(rec, dict) and "custom_id" in rec and "body" not in rec):
        return False
    response, error = rec.get("response"), rec.get("error")
    if isinstance(response, dict):
        payload = response.get("body")
        return isinstance(payload, dict) and (isinstance(payload.get("choices"), list) or is_response_object(payload)
                                              or isinstance(payload.get("error"), dict))
    return response is None and isinstance(error, dict)


def simulations(rec: dict) -> list[dict]:
    """The simulations of a tau2-bench results file, each {id, messages}."""
    sims = rec.get("simulations")
    if not isinstance(sims, list):
        return []
    return [s for s in sims if isinstance(s, dict) and isinstance(s.get("messages"), list)]


def is_mine(rec: Any) -> bool:
    if is_export(rec):                                  # ChatGPT's conversations.json
        return True
    if record_array(rec):
        return any(is_mine(r) for r in rec[:50])
    if isinstance(rec, list):
        return any(is_message(m) for m in rec[:50])
    if not isinstance(rec, dict):
        return False
    if "role" in rec:
        return is_message(rec)
    msgs = conversation_list(rec)
    if msgs is not None:
        return any(is_message(m) for m in msgs[:50])
    if simulations(rec):
        return any(is_message(m) for s in simulations(rec)[:5] for m in s["messages"][:50])
    if (exchange := exchange_body(rec)) is not None:
        return is_mine(exchange)
    return (is_responses_body(rec) or batch_request_body(rec) is not None or is_batch_output(rec)
            or is_completion(rec) or is_saved_response(rec))
