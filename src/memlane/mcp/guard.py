"""Stdio transport guard: every malformed JSON-RPC line gets a JSON-RPC error reply, and nothing big is echoed.

The SDK's stdio transport turns a line it cannot parse into an exception on the read stream, which the
server drops: the client never hears back and a request it sent waits forever. JSON-RPC 2.0 says a
parse failure is answered ``-32700`` with ``id: null`` and an invalid request ``-32600`` (with its
``id`` when it has a usable one). This module checks each line before the SDK parses it and sends
those replies through the SDK's own write stream (``SessionMessage`` + ``JSONRPCError``), so replies
never interleave with the server's. A message longer than ``MAX_MESSAGE_CHARS`` is refused the same
way without being parsed further or echoed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectSendStream
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from memlane.logs import log

# Tool arguments here are short (queries, citations); 1 MB leaves room for any legitimate request.
MAX_MESSAGE_CHARS = 1_000_000


def _usable_id(obj: Any) -> str | int | None:
    if isinstance(obj, dict):
        value = obj.get("id")
        if isinstance(value, str) and len(value) <= 200:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def check(line: str) -> types.JSONRPCError | None:
    """The error reply ``line`` deserves, or None when it is a well-formed JSON-RPC message."""
    text = line.strip()
    if not text:
        return None  # blank lines between messages are harmless
    try:
        obj = json.loads(text)
    except ValueError:
        return _error(None, types.PARSE_ERROR, "Parse error: not valid JSON")
    if len(text) > MAX_MESSAGE_CHARS:
        return _error(
            _usable_id(obj),
            types.INVALID_REQUEST,
            f"Request of {len(text)} characters exceeds memlane's limit of {MAX_MESSAGE_CHARS}",
        )
    if not isinstance(obj, dict):
        kind = "a batch (array)" if isinstance(obj, list) else type(obj).__name__
        return _error(None, types.INVALID_REQUEST, f"Invalid Request: expected one JSON-RPC object, got {kind}")
    try:
        types.jsonrpc_message_adapter.validate_python(obj, by_name=False)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"][1:]) if errors else ""
        what = errors[0]["msg"] if errors else "not a JSON-RPC message"
        return _error(_usable_id(obj), types.INVALID_REQUEST, f"Invalid Request: {where or 'message'}: {what}"[:300])
    return None


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


class GuardedStdin:
    """An async line source for ``stdio_server`` that answers bad lines itself instead of passing them on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.replies: ObjectSendStream[SessionMessage] | None = None
        self.ready = anyio.Event()  # set once the write stream exists (a bad first line waits for it)

    def connect(self, replies: ObjectSendStream[SessionMessage]) -> None:
        self.replies = replies
        self.ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.inner:
            problem = check(line)
            if problem is None:
                yield line
                continue
            log("mcp", "warning", f"rejected a malformed message: {problem.error.message}")
            await self.ready.wait()
            assert self.replies is not None
            await self.replies.send(SessionMessage(problem))


async def serve_stdio(server: MCPServer) -> None:
    """``server.run("stdio")`` with the guard in front of the SDK's parser."""
    stdin = GuardedStdin(anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        stdin.connect(write_stream)
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, too
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(server: MCPServer) -> None:
    anyio.run(serve_stdio, server)
