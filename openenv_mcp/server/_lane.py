"""The fast lane: ``tools/call`` of this server's own tools, answered without FastMCP.

Shared by the lean stdio transport and the HTTP :class:`~openenv_mcp.server._http.FastLane`.
The answer is byte-for-byte what the standard stack sends for the same call:
the tool's result, plus, for a request in the 2026-07-28 envelope, its
``resultType`` and the server's identity in ``_meta``.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from fastmcp import FastMCP
from fastmcp.server.context import TransportType

from openenv_mcp.server._app import EnvApp, lane_transport
from openenv_mcp.server._tools import ModelTool

__all__ = ["ToolLane", "dumps", "is_request_id"]

_VERSION_META = "io.modelcontextprotocol/protocolVersion"
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def is_request_id(value: Any) -> bool:
    """Whether ``value`` can identify a JSON-RPC request here: a string or an integer."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def dumps(message: dict[str, Any]) -> bytes:
    """One compact JSON message."""
    # orjson: a raw Atari frame is 134 KB of base64, which the stdlib's json
    # takes 0.3 ms to escape-scan; orjson takes 0.01 ms.
    try:
        return orjson.dumps(message)
    except TypeError:  # what orjson cannot hold (ints past 64 bits...): never lose a reply
        return json.dumps(message, separators=(",", ":"), default=repr).encode()


class ToolLane:
    """Recognise and answer calls of this server's own tools."""

    def __init__(self, server: FastMCP, app: EnvApp, transport: TransportType) -> None:
        self.tools: dict[str, ModelTool] = {t.name: t for t in app.tools()}
        self.server_info = {"name": server.name, "version": str(server.version)}
        self.transport: TransportType = transport

    def match(self, message: Any) -> tuple[Any, dict[str, Any]] | None:
        """``(id, params)`` when ``message`` is a well-formed call of one of our tools."""
        if not (isinstance(message, dict) and message.get("method") == "tools/call"):
            return None
        params = message.get("params")
        if not (isinstance(params, dict) and params.get("name") in self.tools):
            return None
        if (
            message.get("jsonrpc") != "2.0"
            or not is_request_id(message.get("id"))
            or not isinstance(params.get("arguments", {}), dict | None)
        ):
            return None  # the standard stack answers malformed calls
        return message["id"], params

    async def run(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Run the call; return the JSON-RPC response."""
        token = lane_transport.set(self.transport)  # tools ask which transport they serve
        try:
            reply = await self.tools[params["name"]].reply(params.get("arguments"))
        finally:
            lane_transport.reset(token)
        wire = reply.wire()
        meta = params.get("_meta")
        if isinstance(meta, dict) and _VERSION_META in meta:
            wire["resultType"] = "complete"
            wire["_meta"] = {**wire.get("_meta", {}), _SERVER_INFO: self.server_info}
        return {"jsonrpc": "2.0", "id": request_id, "result": wire}

    async def answer(self, body: bytes, headers: dict[str, str]) -> bytes | None:
        """An HTTP POST body's response, or ``None`` to leave it to the standard stack.

        Only sessionless (2026-07-28) calls qualify: their routing headers must
        mirror the body, as the standard stack requires.
        """
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        found = self.match(message)
        if found is None:
            return None
        request_id, params = found
        meta = params.get("_meta")
        version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
        if (
            version is None
            or headers.get("mcp-protocol-version") != version
            or headers.get("mcp-method") != "tools/call"
            or headers.get("mcp-name") != params["name"]
        ):
            return None
        return dumps(await self.run(request_id, params))
