"""What every client transport shares: one interface, JSON in and out.

A :class:`Transport` sends a JSON-RPC request and returns its ``result`` as a
plain dict (or raises :class:`RpcError` for a JSON-RPC error, and a connection
error when the link fails). The client reads each field it needs from those
dicts: no SDK models are built only to be read back. The lean transports speak
the sessionless 2026-07-28 protocol (``server/discover``, then requests that
carry their own ``_meta``): :class:`Sessionless`, and over newline-delimited
JSON :class:`LineTransport`.
"""

from __future__ import annotations

import asyncio
import itertools
from abc import ABC, abstractmethod
from typing import Any

import orjson

from openenv_mcp._util.version import __version__
from openenv_mcp.wire.exactjson import dumps
from openenv_mcp.wire.sdk import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LATEST_VERSION,
    VERSION_META,
)

__all__ = [
    "MAX_MESSAGE",
    "METHOD_NOT_FOUND",
    "STOP_GRACE",
    "LineTransport",
    "RpcError",
    "Sessionless",
    "Transport",
]

#: Longest message accepted from a server (bytes).
MAX_MESSAGE = 256 * 1024 * 1024
STOP_GRACE = 5.0
_META = {
    VERSION_META: LATEST_VERSION,
    CLIENT_INFO_META: {"name": "openenv-mcp", "version": __version__},
    CLIENT_CAPABILITIES_META: {},
}
METHOD_NOT_FOUND = -32601


class RpcError(Exception):
    """A JSON-RPC error answer: its code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Transport(ABC):
    """One MCP link: requests in, results (plain dicts) out."""

    @abstractmethod
    async def connect(self) -> None:
        """Open the link (start the server, where this transport owns it)."""

    @abstractmethod
    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request; return its ``result``.

        Raises:
            RpcError: the server answered with a JSON-RPC error.
            ConnectionError, OSError, EOFError: the link failed.
        """

    @abstractmethod
    async def close(self) -> None:
        """Release the link (and stop the server, where this transport owns it)."""

    def learn_tools(self, tools: dict[str, dict[str, Any]]) -> None:
        """Take note of the server's tools (their ``inputSchema``): HTTP mirrors the
        parameters they mark with ``x-mcp-header`` into ``Mcp-Param-*`` headers."""
        return None


class Sessionless(Transport):
    """The sessionless protocol: every request carries its own envelope."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def _envelope(self, method: str, params: dict[str, Any] | None) -> tuple[int, bytes]:
        request_id = next(self._ids)
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": {**(params or {}), "_meta": _META},
        }
        return request_id, dumps(body)  # a seed past 64 bits too

    @staticmethod
    def _result(message: dict[str, Any]) -> dict[str, Any]:
        if "error" in message:
            error = message["error"]
            raise RpcError(int(error.get("code", -32603)), str(error.get("message", "error")))
        result: dict[str, Any] = message["result"]
        return result

    async def _discover(self) -> None:
        """Check the server speaks the sessionless protocol."""
        versions = (await self.request("server/discover")).get("supportedVersions", [])
        if LATEST_VERSION not in versions:
            raise RpcError(
                -32602, f"server supports protocol versions {versions}, not {LATEST_VERSION}"
            )


class LineTransport(Sessionless):
    """JSON-RPC over newline-delimited JSON: requests matched to replies by id."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._lost: BaseException | None = None

    @abstractmethod
    def _send_line(self, data: bytes) -> None:
        """Write one line (no newline in ``data``)."""

    async def _flush(self) -> None:
        """Wait until the written lines are on their way."""

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Route a message from the server: a reply to its request, or answer its request."""
        if "id" in message and "method" not in message:
            future = self._pending.get(message["id"])
            if future is not None and not future.done():
                future.set_result(message)
        elif "id" in message:  # a request from the server: answer, never hang it
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            if message["method"] == "ping":
                reply["result"] = {}
            else:
                reply["error"] = {"code": METHOD_NOT_FOUND, "message": "not supported"}
            self._send_line(orjson.dumps(reply))

    def _lose(self, exc: BaseException) -> None:
        """The link is gone: fail every request waiting for a reply, and later ones at once."""
        self._lost = exc if isinstance(exc, Exception) else ConnectionError(repr(exc))
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"lost the server: {self._lost}"))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._lost is not None:
            raise ConnectionError(f"lost the server: {self._lost}")
        request_id, body = self._envelope(method, params)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._send_line(body)
            await self._flush()
            return self._result(await future)
        finally:
            del self._pending[request_id]
