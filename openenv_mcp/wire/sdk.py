"""Every place openenv-mcp leans on FastMCP's or the MCP SDK's internals, in one module.

The direct paths (a tool call answered without FastMCP's stack) must send the
same bytes the standard stack sends, and the lean client must speak the same
protocol as the SDK's; both depend on details that are not public API. They
are all here, and ``tests/wire/test_sdk.py`` checks each one against the
installed packages, so an upgrade that moves one fails there, loudly, rather
than somewhere downstream. Importing this module is cheap: the server-side
helpers import FastMCP when called.
"""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = [
    "LATEST_VERSION",
    "METHOD_HEADER",
    "NAME_BEARING_METHODS",
    "NAME_HEADER",
    "SERVER_INFO_META",
    "VERSION_META",
    "add_http_route",
    "encode_header_value",
    "param_headers",
    "param_headers_mismatch",
    "request_transport",
    "run_standard_stack",
    "use_transport",
]

# -- the sessionless protocol (MCP 2026-07-28), as mcp_types and mcp.shared.inbound define it --

#: The protocol revision the lean client speaks (``mcp_types.version.LATEST_MODERN_VERSION``).
LATEST_VERSION = "2026-07-28"
#: ``_meta`` keys of a 2026-07-28 request's envelope, and of its result's server identity.
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
#: HTTP routing headers that must mirror the body (``mcp.shared.inbound``).
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
NAME_BEARING_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")
_B64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def encode_header_value(value: str) -> str:
    """A header value as ``mcp.shared.inbound.encode_header_value`` writes it."""
    if (
        _HEADER_SAFE.fullmatch(value)
        and value == value.strip()
        and not _B64_SENTINEL.fullmatch(value)
    ):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def param_headers(schema: Any, arguments: dict[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers a ``tools/call`` with ``arguments`` must send, for a tool
    whose input schema marks parameters with ``x-mcp-header`` (none for an invalid
    marking: conforming clients send none then), as the SDK's client sends them."""
    from mcp.shared.inbound import find_invalid_x_mcp_header, mcp_param_headers, x_mcp_header_map

    if find_invalid_x_mcp_header(schema) is not None:
        return {}
    return mcp_param_headers(x_mcp_header_map(schema), arguments)


def param_headers_mismatch(schema: Any, arguments: Any, headers: dict[str, str]) -> bool:
    """Whether a request's ``Mcp-Param-*`` headers disagree with its body, where the SDK's
    Streamable HTTP server answers 400 (``mcp.shared.inbound.validate_mcp_param_headers``)."""
    from mcp.shared.inbound import validate_mcp_param_headers

    if not isinstance(arguments, dict):
        return True
    return validate_mcp_param_headers(schema, arguments, headers) is not None


# -- FastMCP's server internals ----------------------------------------------------------------


def add_http_route(server: Any, route: Any) -> None:
    """Add a Starlette route (a ``Mount``, a ``WebSocketRoute``) to ``server``'s HTTP app.

    ``custom_route`` takes HTTP endpoints only; FastMCP's own contrib modules extend
    the same list for anything else.
    """
    server._additional_http_routes.append(route)


def request_transport() -> str | None:
    """The transport FastMCP says the current request came over, or ``None`` outside one."""
    from fastmcp.server.dependencies import get_context

    try:
        transport: str | None = get_context().transport
    except RuntimeError:  # no request context: in memory, one client
        return None
    return transport


@asynccontextmanager
async def use_transport(transport: str) -> AsyncIterator[None]:
    """Tell FastMCP's stack which transport it serves (its context's ``transport``)."""
    from fastmcp.server.context import reset_transport, set_transport

    token = set_transport(transport)  # type: ignore[arg-type]
    try:
        yield
    finally:
        reset_transport(token)


async def run_standard_stack(server: Any, from_client: Any, to_client: Any) -> None:
    """Run FastMCP's own MCP server over memory streams of ``SessionMessage``.

    FastMCP's stdio runner does exactly this with the process's real streams
    (its lifespan, then the low-level server's ``run``); the direct paths hand
    it memory streams instead and answer their own tool calls themselves.
    Returns when ``from_client`` closes; closes ``to_client``.
    """
    low = server._mcp_server
    async with server._lifespan_manager(), to_client:
        await low.run(from_client, to_client, low.create_initialization_options())


def session_message(message: Any) -> Any:
    """Wrap a parsed JSON-RPC message for the low-level server's streams."""
    from mcp.shared.message import SessionMessage

    return SessionMessage(message)


def parse_jsonrpc(message: Any) -> Any:
    """A JSON-RPC message as the MCP SDK's models (raises on anything malformed)."""
    import mcp_types

    return mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
