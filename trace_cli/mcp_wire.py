"""The stdio wire under `trace mcp`: newline-delimited JSON-RPC between the
client and the SDK's server, answering what the SDK's own stdio transport
drops without a word. There, a line that is not one JSON-RPC message (bad
JSON, or a batch) was discarded, so a client that sent one waited for an
answer forever. Here:

- a line that is not JSON gets a -32700 parse error (id null);
- a JSON value that is not a message gets -32600 (with its id when it has
  one, else null); an empty batch too, and a request whose id is null, a
  fraction, a bool or a structure (the SDK took it for a notification);
- JSON orjson refuses but the standard allows (a lone surrogate's escape)
  is read all the same, so the request it carries is answered under its
  own id;
- a batch (a JSON array, which JSON-RPC 2.0 and MCP up to 2025-03-26
  allow) is served as one: each message goes to the server and the
  answers go back together as one array, once every request in it has
  been answered (or cancelled);
- once a protocol version that removed batches (2025-06-18 and later) is
  agreed, a batch gets one -32600 error for each request in it, naming
  the fix, instead of silence;
- a request before the handshake that names no version gets -32600
  saying to initialize first;
- a list request with a cursor gets -32602 (the spec's answer to an
  invalid cursor): every list here fits one page and never hands out a
  cursor, so any cursor is one this server did not issue.

A client that closes its end of the pipe ends the server quietly.

While serving, fd 0 reads /dev/null and fd 1 writes to stderr, so nothing
a tool or a library prints can reach the wire: stdout carries protocol
messages only."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
BAD_ID = "Invalid Request: a request's id must be a string or an integer (not null, a fraction, a bool or a structure)"
BATCH_VERSIONS = ("2024-11-05", "2025-03-26")     # 2025-06-18 took JSON-RPC batches out of MCP
VERSION_META = "io.modelcontextprotocol/protocolVersion"
NOT_INITIALIZED = (f"Invalid Request: send initialize first (or, from protocol 2026-07-28, name the version in "
                   f"params._meta[\"{VERSION_META}\"])")


def error_reply(rid: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _request_id(obj: Any) -> Any:
    """A request's id when it has a usable one (a string or an integer), else None."""
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)) else None


def _unusable_id(obj: Any) -> bool:
    """A request whose id is there but is no id (null, a fraction, a bool,
    an array, an object): the SDK reads it as a notification and answers
    nothing, so its client would wait for ever."""
    return isinstance(obj, dict) and "method" in obj and "id" in obj and _request_id(obj) is None


def parse_line(line: bytes) -> Any:
    """One line's JSON value. orjson first; JSON it refuses that the
    standard allows (a lone surrogate written as an escape, as JavaScript's
    JSON.stringify does) is read by the standard library rather than
    answered with a parse error no request can be matched to. NaN and
    Infinity are not JSON either way. (orjson reads an integer past 64
    bits as a float: such an id is refused as a fraction would be.)"""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        first = exc
    try:
        return json.loads(line, parse_constant=_not_json)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise first from None


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")


def encode_message(message: Any) -> bytes:
    """One message as a line. A string holding a lone surrogate (echoed
    from a request) is written as its escape, which orjson will not."""
    try:
        return orjson.dumps(message) + b"\n"
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


def _unissued_cursor(obj: dict) -> bool:
    """A `*/list` request that names a cursor (a null one means none)."""
    params = obj.get("params")
    method = obj.get("method")
    return (isinstance(method, str) and method.endswith("/list") and _request_id(obj) is not None
            and isinstance(params, dict) and params.get("cursor") is not None)


@dataclass
class _Batch:
    waiting: set = field(default_factory=set)       # ids of requests not answered yet
    replies: list = field(default_factory=list)


@dataclass
class Wire:
    """What the reader and the writer share (one event loop: no locks)."""
    rewrite: Any = None                             # reply -> reply, applied to each one the server sends
    version: str | None = None                      # the protocol version agreed or stated
    init_id: Any = None
    batches: list[_Batch] = field(default_factory=list)

    def read(self, line: bytes) -> tuple[list, list[dict]]:
        """(messages for the server, replies to write now) for one input line."""
        from pydantic import ValidationError

        import mcp_types as types
        try:
            value = parse_line(line)
        except orjson.JSONDecodeError as exc:
            return [], [error_reply(None, PARSE_ERROR, f"Parse error: {exc}")]
        single = not isinstance(value, list)
        items = [value] if single else value
        if not items:
            return [], [error_reply(None, INVALID_REQUEST, "Invalid Request: an empty batch")]
        if not single and self.version is not None and self.version not in BATCH_VERSIONS:
            why = (f"Invalid Request: JSON-RPC batches are not part of MCP {self.version}; "
                   f"send each message on its own line")
            errors = [error_reply(_request_id(o), INVALID_REQUEST, why) for o in items if _request_id(o) is not None]
            return [], [errors or error_reply(None, INVALID_REQUEST, why)]
        messages, errors, batch, done = [], [], _Batch(), []
        for obj in items:
            if _unusable_id(obj):
                errors.append(error_reply(None, INVALID_REQUEST, BAD_ID))
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_python(obj, by_name=False)
            except ValidationError:
                errors.append(error_reply(_request_id(obj), INVALID_REQUEST,
                                          "Invalid Request: not a JSON-RPC 2.0 message"))
                continue
            if _unissued_cursor(obj):
                errors.append(error_reply(_request_id(obj), INVALID_PARAMS,
                                          f"Invalid params: cursor {obj['params']['cursor']!r} was not issued by "
                                          f"this server (its lists fit one page and carry no nextCursor); "
                                          f"list without a cursor"))
                continue
            done += self._noticed(obj)
            messages.append(message)
            if not single and "method" in obj and _request_id(obj) is not None:
                batch.waiting.add(_request_id(obj))
        if single and messages and self._before_handshake(value):
            return [], [error_reply(_request_id(value), INVALID_REQUEST, NOT_INITIALIZED)]
        if single:
            return messages, errors + done
        batch.replies = errors
        if batch.waiting:
            self.batches.append(batch)
            return messages, done
        return messages, done + ([errors] if errors else [])

    def _before_handshake(self, obj: dict) -> bool:
        """A request (not a ping) before any initialize, naming no version
        of its own: the SDK refuses it with a bare "Invalid request
        parameters"; this says what to send."""
        if self.init_id is not None or self.version is not None or _request_id(obj) is None:
            return False
        params = obj.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        stated = isinstance(meta, dict) and VERSION_META in meta
        return obj.get("method") not in ("initialize", "ping", "server/discover") and not stated

    def _noticed(self, obj: dict) -> list:
        """A batch a cancellation completed (a cancelled request gets no answer)."""
        from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
        params = obj.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        stated = meta.get(VERSION_META) if isinstance(meta, dict) else None
        if stated in KNOWN_PROTOCOL_VERSIONS:       # 2026-07-28 on: each request names its version
            self.version = stated
        if obj.get("method") == "initialize":
            self.init_id = _request_id(obj)
        elif obj.get("method") == "notifications/cancelled":
            return self._settle(params.get("requestId") if isinstance(params, dict) else None, None) or []
        return []

    def written(self, reply: dict) -> list:
        """What to write for one message from the server: itself, nothing yet
        (a batch still waiting), or a finished batch's array."""
        if self.rewrite is not None:
            reply = self.rewrite(reply)
        rid = reply.get("id")
        if rid is not None and rid == self.init_id and "method" not in reply:
            # the handshake's answer; the id may be used again later (by a careless client): forget it
            self.init_id = None
            if isinstance(reply.get("result"), dict):
                self.version = reply["result"].get("protocolVersion")
        if "method" in reply or rid is None:
            return [reply]
        settled = self._settle(rid, reply)
        return [reply] if settled is None else settled

    def _settle(self, rid: Any, reply: dict | None) -> list | None:
        """What to write now that request `rid` is answered (`reply`) or
        cancelled (None): nothing while its batch waits, the batch's array
        once complete; None when `rid` is in no batch."""
        for batch in self.batches:
            if rid in batch.waiting:
                batch.waiting.discard(rid)
                if reply is not None:
                    batch.replies.append(reply)
                if batch.waiting:
                    return []
                self.batches.remove(batch)
                return [batch.replies] if batch.replies else []
        return None


@contextmanager
def claimed_stdio():
    """(fd reading the client, fd writing to it); meanwhile fd 0 is
    /dev/null and fd 1 is stderr. Both are put back on the way out."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.close(null)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


async def serve_stdio(lowlevel, init_options, rewrite=None) -> None:
    """Run the SDK's low-level server over this process's stdin/stdout."""
    from mcp.shared.message import SessionMessage

    wire = Wire(rewrite)
    to_server, server_in = anyio.create_memory_object_stream(32)
    server_out, from_server = anyio.create_memory_object_stream(32)
    outbox, lines_out = anyio.create_memory_object_stream(32)
    with claimed_stdio() as (fd_in, fd_out):
        stdin = anyio.wrap_file(open(fd_in, "rb", closefd=False))
        stdout = anyio.wrap_file(open(fd_out, "wb", closefd=False))

        async def read_client():
            async with to_server, outbox.clone() as replies:
                async for line in stdin:
                    if not line.strip():
                        continue
                    messages, now = wire.read(line)
                    for message in messages:
                        await to_server.send(SessionMessage(message))
                    for reply in now:
                        await replies.send(reply)

        async def pass_server_output():
            async with from_server, outbox:
                async for item in from_server:
                    reply = item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
                    for out in wire.written(reply):
                        await outbox.send(out)

        async def write_client():
            async with lines_out:
                try:
                    async for out in lines_out:
                        await stdout.write(encode_message(out))
                        await stdout.flush()
                except (BrokenPipeError, ConnectionResetError):     # the client went away: nothing left to serve
                    tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_client)
            tg.start_soon(pass_server_output)
            tg.start_soon(read_client)
            await lowlevel.run(server_in, server_out, init_options)
            await server_out.aclose()           # the writer ends once what is owed is written
