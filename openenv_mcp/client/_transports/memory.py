"""A server object made by ``build_server``, served in this process through the very
loop a stdio server runs (its direct path and FastMCP's stack), over in-memory lines."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from typing import Any

import orjson

from openenv_mcp.client._transports.base import STOP_GRACE, LineTransport

__all__ = ["MemoryTransport"]


class MemoryTransport(LineTransport):
    """A server object made by ``build_server``, served in this process.

    The server runs the loop a stdio server runs (its direct path for tool
    calls, FastMCP's stack for the rest) on a task of this event loop, fed
    lines through memory: in-memory tests exercise the stdio server's own path.
    """

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server
        self._task: asyncio.Task[None] | None = None
        self._send: Any = None
        self._receive: Any = None

    async def connect(self) -> None:
        import anyio

        from openenv_mcp.server import get_app
        from openenv_mcp.server.transports._stdio import LineConnection

        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._send, self._receive = send, receive
        connection = LineConnection(self.server, get_app(self.server), self._on_line, "memory")

        async def lines() -> AsyncIterator[bytes | ValueError]:
            async with receive:
                async for line in receive:
                    yield line

        self._task = asyncio.ensure_future(connection.serve(lines()))
        self._task.add_done_callback(self._ended)
        await self._discover()

    def _on_line(self, data: bytes) -> None:
        self._dispatch(orjson.loads(data))

    def _ended(self, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        self._lose(error or ConnectionError("the in-memory server stopped"))

    def _send_line(self, data: bytes) -> None:
        if self._send is None:
            raise ConnectionError("not connected")
        self._send.send_nowait(data + b"\n")

    async def close(self) -> None:
        """End the input: the server answers what is in flight, then its loop ends."""
        if self._send is not None:
            self._send.close()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._task), STOP_GRACE)
            if not self._task.done():
                self._task.cancel()
        if self._receive is not None:
            self._receive.close()

    def __repr__(self) -> str:
        return f"<MemoryTransport {getattr(self.server, 'name', self.server)!r}>"
