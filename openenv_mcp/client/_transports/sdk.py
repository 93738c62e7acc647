"""Any FastMCP ``ClientTransport`` (SSE, custom auth...), through FastMCP's client:
for targets the lean transports do not cover; slower per call."""

from __future__ import annotations

from typing import Any

from openenv_mcp.client._transports.base import METHOD_NOT_FOUND, RpcError, Transport

__all__ = ["SdkTransport"]


class SdkTransport(Transport):
    """Any FastMCP ``ClientTransport``, through FastMCP's client (results dumped to dicts).

    For targets the lean transports do not cover (SSE, custom auth flows, a
    FastMCP server not made by ``build_server``); slower per call.
    """

    def __init__(self, transport: Any, init_timeout: float) -> None:
        from fastmcp import Client

        self.inner = transport
        self._client = Client(transport, init_timeout=init_timeout)

    async def connect(self) -> None:
        await self._client.__aenter__()  # type: ignore[no-untyped-call]

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        params = params or {}
        session = self._client.session
        try:
            if method == "tools/call":
                result: Any = await session.call_tool(params["name"], params.get("arguments"))
            elif method == "tools/list":
                result = await session.list_tools()
            elif method == "resources/list":
                result = await session.list_resources()
            elif method == "resources/read":
                result = await session.read_resource(params["uri"])
            else:
                raise RpcError(METHOD_NOT_FOUND, f"{method} is not supported over this transport")
        except MCPError as exc:
            if exc.code == -32000:  # the SDK's CONNECTION_CLOSED
                raise ConnectionError(exc.message) from exc
            raise RpcError(exc.code, exc.message) from exc
        dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped

    async def close(self) -> None:
        await self._client.close()  # type: ignore[no-untyped-call]

    def __repr__(self) -> str:
        return repr(self.inner)
