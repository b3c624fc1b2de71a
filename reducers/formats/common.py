"""Small pieces every format parser needs: timestamps, derived session ids,
tool-call text and flattening of content-block lists."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Iterable, Iterator

import orjson

from reducers.canonical import deep_json
from reducers.drafts import BadRecord, Draft

_ISO_FRACTION = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")
_ALREADY_NORMAL = re.compile(r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d\.\d{3}Z")


def to_utc_iso(value: Any) -> str | None:
    """Normalise a source timestamp (ISO 8601 string, epoch seconds or
    milliseconds) to 'YYYY-MM-DDTHH:MM:SS.mmmZ'; None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str) and len(value) == 24 and _ALREADY_NORMAL.fullmatch(value):
        # Claude Code's own form: the pattern checks seconds and milliseconds,
        # the calendar checks the minute (runs of events share it).
        return value if _real_minute(value[:16]) else None
    try:
        if isinstance(value, (int, float)):
            seconds = value / 1000.0 if value > 1e11 else float(value)
            dt = datetime.fromtimestamp(seconds, tz=timezone.utc)
        elif isinstance(value, str):
            text = value.strip().replace(" ", "T", 1)
            m = _ISO_FRACTION.match(text)
            if not m:
                return None
            base, frac, tz = m.groups()
            frac = (frac or ".0")[:7]           # datetime takes at most microseconds
            tz = "+00:00" if tz in (None, "Z") else (tz if ":" in tz else f"{tz[:3]}:{tz[3:]}")
            dt = datetime.fromisoformat(f"{base}{frac}{tz}")
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


@lru_cache(maxsize=4096)
def _real_minute(text: str) -> bool:
    """Whether 'YYYY-MM-DDTHH:MM' names a minute that exists."""
    try:
        datetime.fromisoformat(text)
        return True
    except ValueError:
        return False


def derived_session_id(source_id: str, conversation_index: int, opening: Any) -> str:
    """A stable session id for sources that carry none: derived from the file
    (absolute path, or '-' for stdin), the conversation's position in it and
    its first message, so two different conversations never share an id."""
    h = hashlib.sha256()
    h.update(source_id.encode("utf-8", "surrogatepass"))
    h.update(b"\0%d\0" % conversation_index)
    h.update(sorted_json(opening))
    name = re.sub(r"(\.(jsonl?|json|ndjson|traj))+$", "", source_id.rsplit("/", 1)[-1])
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:40] or "stdin"
    return f"{stem}-{h.hexdigest()[:12]}"


def conversation_session_id(ctx, index: int, source_id: Any, opening: Any) -> str:
    """A conversation's session: --session, else an id the data carries,
    else one derived from the file, the position and the first message."""
    if ctx.session:
        return ctx.session
    if isinstance(source_id, (str, int)) and not isinstance(source_id, bool) and str(source_id):
        return str(source_id)
    return derived_session_id(ctx.source_id, index, opening)


def is_export_of(rec: Any, is_conversation) -> bool:
    """A chat service's data export (ChatGPT's, Claude.ai's): one
    conversation, or an array of them (judged by its first 20)."""
    if isinstance(rec, list):
        return bool(rec) and all(is_conversation(c) for c in rec[:20])
    return is_conversation(rec)


def exported_conversations(rec: Any, is_conversation) -> Iterator[tuple[int, dict]]:
    """(position, conversation) of each conversation in such an export."""
    for index, conv in enumerate(rec if isinstance(rec, list) else [rec]):
        if is_conversation(conv):
            yield index, conv


def sorted_json(value: Any) -> bytes:
    """A value's JSON with keys sorted: the same record always gives the
    same bytes (for digests and content addresses)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except TypeError:                      # an integer beyond 64 bits, a lone surrogate, deep nesting
        pass
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          default=str).encode("utf-8", "surrogatepass")
    except (RecursionError, ValueError):   # nested past the stack, a 5,000-digit number
        return deep_json(value).encode("utf-8", "surrogatepass")


def content_digest(value: Any) -> str:
    """A short, stable digest of a source record."""
    return hashlib.sha256(sorted_json(value)).hexdigest()[:10]


@dataclass(slots=True)
class Conversation:
    """One conversation of a message-list source (OpenAI, Anthropic), and
    where its dedupe keys and turn ids come from.

    Positions alone are not an identity: two files forced into one session
    (`--session`, a session streamed in parts) both start at message 0. So a
    key also carries a digest of the message it stands for, and a turn id a
    digest of the user message that opened the turn. Re-reading the same or
    a grown source gives the same keys (the same messages at the same
    places); a different message at the same place is new."""
    prefix: str
    session_id: str
    index: int
    messages: int = 0           # messages seen so far: the m<index> of the next one
    users: int = 0              # user messages that opened a turn: the t<n> of the current turn
    digest: str = ""            # of the message being read
    opener: str = ""            # digest of the user message that opened the current turn

    def begin(self, message: Any) -> None:
        self.digest = content_digest(message)

    def place(self, index: int | str | None) -> int | str:
        """A message's place: `index` as given ("response", an item of a
        response), or the next message number."""
        if index is None:
            index = self.messages
            self.messages += 1
        return index

    def start_turn(self) -> None:
        self.users += 1
        self.opener = self.digest

    def turn(self) -> str:
        base = f"{self.session_id}/c{self.index}/t{self.users}"
        return f"{base}-{self.opener}" if self.opener else base

    def key(self, message: int | str, part: int) -> str:
        record = f"m{message}" if isinstance(message, int) else message    # "system", "response"
        return f"{self.prefix}/{self.session_id}/c{self.index}/{self.digest}/{record}/{part}"


def call_origin(block: dict) -> dict:
    """Meta naming what made a tool call when the model did not make it
    directly (Anthropic's programmatic tool calling: `caller` names the
    code-execution run), else nothing."""
    caller = block.get("caller")
    return {"caller": caller} if isinstance(caller, dict) and caller.get("type") != "direct" else {}


def compact_json(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:                      # an integer beyond 64 bits, a lone surrogate
        return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def tool_call_text(name: str | None, arguments: Any) -> str:
    """What the model emitted for a call: the tool name, then its input."""
    if isinstance(arguments, str):
        args = arguments
    elif arguments is None:
        args = "{}"
    else:
        args = compact_json(arguments)
    return f"{name or 'tool'} {args}"


MEDIA_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file", "input_audio"})


def media_blocks(content: Any) -> list[dict]:
    """The media blocks (images, documents, audio) inside message or
    tool-result content, as given: the text keeps a placeholder for each,
    the blocks themselves are kept whole as attachments."""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    found: list[dict] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("type"), str) and block["type"] in MEDIA_TYPES:
            found.append(block)
        elif isinstance(block.get("content"), (list, dict)):
            found.extend(media_blocks(block["content"]))
    return found


def flatten_content(content: Any) -> str:
    """Text of a message or tool-result content: a string, or a list of
    content blocks (text, image, document, tool_reference...). Non-text
    blocks become a short bracketed placeholder so nothing vanishes silently."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return compact_json(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
            continue
        if not isinstance(block, dict):
            parts.append(compact_json(block))
            continue
        btype = block.get("type")
        if isinstance(block.get("text"), str) and btype in (None, "text", "input_text", "output_text"):
            parts.append(block["text"])
        elif btype == "text" and isinstance(block.get("text"), dict) and isinstance(block["text"].get("value"), str):
            parts.append(block["text"]["value"])                      # Assistants API: {"value", "annotations"}
        elif btype == "image_file":                                      # Assistants API: an uploaded file's id
            file_id = (block.get("image_file") or {}).get("file_id") if isinstance(block.get("image_file"), dict) else None
            parts.append(f"[image: {file_id}]" if isinstance(file_id, str) and file_id else "[image]")
        elif btype in ("image", "image_url", "input_image"):
            parts.append("[image]")
        elif btype in ("document", "file", "input_file"):
            title = next((block[k] for k in ("title", "filename") if isinstance(block.get(k), str) and block[k]), "")
            parts.append(f"[document{': ' + title if title else ''}]")
            parts.append(_document_text(block.get("source")))        # a plain-text document is readable
        elif btype == "search_result":                                # cited search results the caller supplied
            source = block.get("source")
            where = f" <{source}>" if isinstance(source, str) and source else ""
            parts.append(f"[search_result: {block.get('title') or ''}{where}]")
            parts.append(flatten_content(block.get("content")))
        elif btype == "tool_reference":
            parts.append(f"[tool_reference: {block.get('tool_name') or block.get('name') or ''}]")
        elif "content" in block:
            parts.append(flatten_content(block["content"]))
        elif isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(compact_json(block))
    return "\n".join(p for p in parts if p != "")


def _document_text(source: Any) -> str:
    """The text of a document given as text ({"type": "text", "data"}) or as
    content blocks ({"type": "content", "content"}); "" for binary ones."""
    if not isinstance(source, dict):
        return ""
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        return source["data"]
    if source.get("type") == "content":
        return flatten_content(source.get("content"))
    return ""


def api_error_text(error: dict) -> str:
    """An API error object ({"type"|"code", "message"}) as one line."""
    kind = next((error[k] for k in ("type", "code") if isinstance(error.get(k), str) and error[k]), "error")
    message = error.get("message")
    return f"API error: {kind}: {message}" if isinstance(message, str) and message else f"API error: {kind}"


def failure_text(error: Any) -> str:
    """What a failed call returned, as one line: an API error object, or
    the string an application logged in its place."""
    return api_error_text(error) if isinstance(error, dict) else f"API error: {error}"


def error_draft(conv: Conversation, returned: Any, text: str, line: int, ts: str | None = None, **meta) -> Draft:
    """What came back instead of a reply (an API error, an expired batch
    request): one system event in the reply's place."""
    conv.begin(returned)
    return Draft(kind="system", text=text, session_id=conv.session_id, key=conv.key("response", 0),
                 turn_id=conv.turn(), ts=ts, line=line, meta={"subtype": "error", **meta})


def one_message(line: int, where: Any, drafts: Iterable) -> Iterator:
    """The drafts of one message of a record that holds many (a whole
    session's document, a request body's history): a message whose fields
    the parser cannot read (a number where an object belongs) costs that
    message only -- a BadRecord naming it -- not the rest of the record."""
    it = iter(drafts)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except Exception as exc:              # any wrong-typed field deep inside
            yield BadRecord(line, f"message {where}: could not read it ({type(exc).__name__}: {str(exc)[:200]}); "
                                  f"the other messages are read without it")
            return
        yield item
