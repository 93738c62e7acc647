"""Tool calls answered straight from a JSON-RPC message, without FastMCP's stack.

The transports' direct paths (stdio's loop, the HTTP direct path) hand a
``tools/call`` for one of this server's own tools to :class:`DirectCalls`, which
answers with exactly the bytes the standard stack would send; every other
message goes to the standard stack.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY

from openenv_mcp.server.episodes._handlers import direct_transport
from openenv_mcp.server.tools._tools import ModelTool
from openenv_mcp.wire.exactjson import dumps as wire_dumps
from openenv_mcp.wire.sdk import SERVER_INFO_META, VERSION_META

__all__ = ["DirectCalls", "dumps", "is_request_id"]


def is_request_id(value: Any) -> bool:
    """Whether ``value`` can identify a JSON-RPC request here: a string or an integer."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def dumps(message: dict[str, Any]) -> bytes:
    """One compact JSON message."""
    # orjson: a raw Atari frame is 134 KB of base64, which the stdlib's json
    # takes 0.3 ms to escape-scan; orjson takes 0.01 ms.
    return wire_dumps(message)


class DirectCalls:
    """Recognise and answer ``tools/call`` messages for this server's own tools.

    The answer is byte-for-byte what the standard stack sends for the same call:
    the tool's result, plus, for a request in the 2026-07-28 envelope, its
    ``resultType`` and the server's identity in ``_meta``.
    """

    def __init__(
        self,
        tools: list[ModelTool],
        server_info: dict[str, str],
        transport: str,
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        self.tools = {t.name: t for t in tools}
        #: Extensions that change a call's answer (MCP tasks): a call declaring one goes
        #: to the standard stack, where they are served.
        self.extensions = extensions
        #: Tools with a parameter mirrored in an ``Mcp-Param-*`` header: their schemas.
        self.header_schemas = {
            t.name: t.parameters
            for t in tools
            if any("x-mcp-header" in p for p in t.parameters.get("properties", {}).values())
        }
        self.server_info = server_info
        self.transport = transport

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
        if self.extensions and self._declares_extension(params):
            return None
        return message["id"], params

    def _declares_extension(self, params: dict[str, Any]) -> bool:
        meta = params.get("_meta")
        caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
        declared = caps.get("extensions") if isinstance(caps, dict) else None
        return isinstance(declared, dict) and not self.extensions.isdisjoint(declared)

    async def run(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Run the call; return the JSON-RPC response."""
        token = direct_transport.set(self.transport)  # handlers ask which transport they serve
        try:
            reply = await self.tools[params["name"]].reply(params.get("arguments"))
        finally:
            direct_transport.reset(token)
        wire = reply.wire()
        meta = params.get("_meta")
        if isinstance(meta, dict) and VERSION_META in meta:
            wire["resultType"] = "complete"
            wire["_meta"] = {**wire.get("_meta", {}), SERVER_INFO_META: self.server_info}
        return {"jsonrpc": "2.0", "id": request_id, "result": wire}
