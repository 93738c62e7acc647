"""A lean stdio transport: newline-delimited JSON-RPC with a fast lane for tool calls.

The stock stdio stack spends about 1.8 ms of server time on each request
(thread hops, pydantic models of every message, middleware), several times an
emulator step. This loop reads stdin on the event loop itself and answers
``tools/call`` for this server's own tools directly: parse, run the tool,
write one JSON line. Every other message (the handshake, ``tools/list``,
resources, pings, notifications, unknown tools) goes to FastMCP's own server
through memory streams, so the wire stays standard MCP in both protocol eras
(the 2025 ``initialize`` handshake and 2026-07-28's per-request envelope); the
independent-client tests (MCP Inspector, TypeScript SDK) check that.

At stdin EOF, calls in flight finish and their replies are written before the
server exits: nothing a client sent is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from fastmcp import FastMCP
from mcp.shared.message import SessionMessage

from openenv_mcp.server._app import EnvApp
from openenv_mcp.server._lane import ToolLane, dumps

__all__ = ["MAX_LINE", "serve_stdio"]

log = logging.getLogger("openenv_mcp.server")

#: Longest request line accepted (bytes); longer ones get a JSON-RPC error.
MAX_LINE = 16 * 1024 * 1024
_PARSE_ERROR = -32700


class _Wire:
    """The two ends of the pipe, owned privately so stray prints cannot corrupt them.

    While serving, fd 1 points at stderr and fd 0 at the null device: a
    ``print`` in an environment lands in the log, not in the protocol.
    """

    def __init__(self) -> None:
        self._in = os.dup(0)
        self._out = os.dup(1)
        os.dup2(2, 1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.reader = os.fdopen(self._in, "rb", buffering=0)
        self.writer: IO[bytes] = os.fdopen(self._out, "wb", buffering=0)

    def restore(self) -> None:
        os.dup2(self._in, 0)
        os.dup2(self._out, 1)
        self.reader.close()
        self.writer.close()


async def _lines(reader: IO[bytes]) -> AsyncIterator[bytes | ValueError]:
    """Lines from ``reader``; a line over :data:`MAX_LINE` yields a ValueError."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), reader)
    except ValueError:
        # Not a pipe, socket or tty (e.g. a regular file): read it on a thread.
        while line := await anyio.to_thread.run_sync(reader.readline, MAX_LINE + 1):
            yield line if len(line) <= MAX_LINE else ValueError("line too long")
        return
    while True:
        try:
            line = await stream.readline()
        except ValueError as exc:  # over the limit: asyncio dropped the line
            yield exc
            continue
        if not line:
            return
        yield line


class _Server:
    """One stdio connection: the fast lane plus FastMCP for everything else."""

    def __init__(self, server: FastMCP, app: EnvApp, writer: IO[bytes]) -> None:
        self.lane = ToolLane(server, app, "stdio")
        self.writer = writer
        self.in_flight = 0
        self.idle = anyio.Event()
        self.idle.set()

    def write(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else dumps(message) + b"\n"
        try:
            self.writer.write(data)
        except (BrokenPipeError, ValueError):
            log.warning("client went away; dropping a reply")

    async def call_tool(self, request_id: Any, params: dict[str, Any]) -> None:
        try:
            self.write(await self.lane.run(request_id, params))
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.set()

    async def pump_out(self, stream: Any) -> None:
        async for session_message in stream:
            data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
            self.write(data.encode() + b"\n")

    async def pump_in(self, reader: IO[bytes], to_server: Any, tg: TaskGroup) -> None:
        async for line in _lines(reader):
            if isinstance(line, ValueError):
                self.write(self._parse_error(f"request line longer than {MAX_LINE} bytes"))
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                self.write(self._parse_error(f"not JSON: {exc}"))
                continue
            fast = self.lane.match(message)
            if fast is not None:
                self.in_flight += 1
                self.idle = anyio.Event()
                tg.start_soon(self.call_tool, *fast)
                continue
            try:
                parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
            except Exception as exc:
                await to_server.send(exc)
                continue
            await to_server.send(SessionMessage(parsed))
        await self.idle.wait()  # EOF: finish the calls in flight before closing

    @staticmethod
    def _parse_error(message: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": None, "error": {"code": _PARSE_ERROR, "message": message}}


async def serve_stdio(server: FastMCP, app: EnvApp) -> None:
    """Serve ``server`` over this process's stdin/stdout until stdin closes."""
    from fastmcp.server.context import reset_transport, set_transport

    wire = _Wire()
    conn = _Server(server, app, wire.writer)
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage](64)
    token = set_transport("stdio")
    try:
        # FastMCP's own stdio runner does exactly this with the process's real
        # streams; we hand it memory streams instead (private API, pinned <5).
        async with server._lifespan_manager(), anyio.create_task_group() as tg:
            low = server._mcp_server

            async def run_standard_stack() -> None:
                async with to_client:  # closing it ends pump_out once drained
                    await low.run(from_client, to_client, low.create_initialization_options())

            tg.start_soon(run_standard_stack)
            tg.start_soon(conn.pump_out, from_server)
            async with to_server:  # closing it (at EOF) ends the standard stack
                await conn.pump_in(wire.reader, to_server, tg)
    finally:
        reset_transport(token)
        with contextlib.suppress(OSError):
            wire.restore()
        sys.stdout.flush()
