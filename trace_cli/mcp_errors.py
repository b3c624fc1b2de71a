"""The MCP spec's error answers where the SDK gives others, and a server
that reports a failed request in one line on stderr.

What the SDK (mcp 2.3) does and what the spec asks instead:
- `prompts/get` with a name the server does not have: the SDK raises a
  plain ValueError, answered with code 0 and a rich traceback on stderr;
  the spec's answer is -32602 (invalid params).
- `tools/call` with a name the server does not have: the SDK returns a tool
  result with isError; the spec lists an unknown tool among the protocol
  errors (-32602). (Arguments a tool refuses stay a tool result with
  isError, as the spec asks from 2025-11-25: the model reads it and
  corrects the call.)
- `resources/read` of a URI the server does not have: the SDK answers
  -32602 with data.uri, which is the answer from protocol 2026-07-28 on
  (SEP-2164); the versions before it name -32002 (resource not found), so
  a client that agreed on one of them gets that.
- A tool call naming an argument the tool does not take: the SDK drops
  it and runs the call (a misspelt `sesion` filter searched every
  session); here it is refused, as a tool result with isError naming the
  argument, as the spec asks for arguments a tool refuses.
- A string argument holding a lone surrogate: pydantic's "unable to parse
  raw data as a unicode string"; here the CLI's line (require_utf8).
- Any other exception a handler raises: code 0, which JSON-RPC does not
  define; -32603 (internal error) here.

A request that fails is logged as one line (the method and the reason);
TRACE_DEBUG=1 adds the traceback, as everywhere in TRACE."""
from __future__ import annotations

import logging
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND_BEFORE_2026 = -32002    # the code protocol versions up to 2025-11-25 name


class SpecErrors(MCPServer):
    """MCPServer answering unknown tools, prompts and resources as the spec asks."""

    async def _handle_call_tool(self, ctx, params):
        tool = self._tool_manager.get_tool(params.name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name!r}; this server's tools are "
                                           f"{_names(t.name for t in await self.list_tools())} (tools/list)")
        known = set((tool.parameters or {}).get("properties") or {})
        unknown = sorted(set(params.arguments or {}) - known)
        if unknown:       # a misspelt filter (`sesion`) would be dropped and the call answered unfiltered
            from mcp_types import CallToolResult, TextContent
            said = ", ".join(f"`{name}`" for name in unknown)
            return CallToolResult(is_error=True, content=[TextContent(type="text", text=(
                f"trace: error: bad arguments for {params.name}: {said}: no such argument; "
                f"{params.name} takes {_names(known)}"))])
        not_utf8 = _not_utf8(params.name, params.arguments or {})
        if not_utf8:      # pydantic's own wording ("unable to parse raw data") says nothing the model can fix
            from mcp_types import CallToolResult, TextContent
            return CallToolResult(is_error=True, content=[TextContent(type="text", text=f"trace: error: {not_utf8}")])
        return await super()._handle_call_tool(ctx, params)

    async def _handle_get_prompt(self, ctx, params):
        if self._prompt_manager.get_prompt(params.name) is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name!r}; this server's prompts are "
                                           f"{_names(p.name for p in await self.list_prompts())} (prompts/list)")
        return await super()._handle_get_prompt(ctx, params)

    async def _handle_read_resource(self, ctx, params):
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
        try:
            return await super()._handle_read_resource(ctx, params)
        except MCPError as exc:
            legacy = ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
            if exc.code == INVALID_PARAMS and legacy:
                raise MCPError(RESOURCE_NOT_FOUND_BEFORE_2026, exc.message, exc.data) from None
            raise


def _not_utf8(tool: str, arguments: dict) -> str:
    """The CLI's line for the first argument holding a lone surrogate (a
    JSON escape of half a pair, as JavaScript writes it), at any depth;
    "" when there is none."""
    from stores.errors import UsageError, require_utf8

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield from strings(key)
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)
    for name, value in arguments.items():
        for text in strings(value):
            try:
                require_utf8(text, f"{tool} argument `{name}`:")
            except UsageError as exc:
                return str(exc)
    return ""


def _names(names) -> str:
    listed = sorted(names)
    return ", ".join(listed) if listed else "none"


def defined_codes(reply: dict) -> dict:
    """A reply whose error has code 0 (the SDK's answer to an exception it
    did not expect) with -32603 instead."""
    error = reply.get("error")
    if isinstance(error, dict) and error.get("code") == 0:
        return {**reply, "error": {**error, "code": INTERNAL_ERROR}}
    return reply


class _OneLine(logging.Formatter):
    """`trace mcp: MESSAGE`, with the exception's type and text on the same
    line; its traceback only with TRACE_DEBUG=1."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"trace mcp: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line += f": {type(exc).__name__}: {exc}"
            if os.environ.get("TRACE_DEBUG"):
                line += "\n" + self.formatException(record.exc_info)
        return line


def one_line_logging(level: int = logging.WARNING) -> None:
    """Replace the SDK's rich handler (tracebacks drawn in boxes) on the root logger."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    logging.basicConfig(level=level, handlers=[handler], force=True)
