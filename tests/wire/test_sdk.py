"""Every reliance on FastMCP's or the MCP SDK's internals (``openenv_mcp.wire.sdk``),
checked against the installed packages: an upgrade that moves one fails here, by name."""

from __future__ import annotations

import inspect

import mcp_types
import pytest
from fastmcp import FastMCP
from mcp.shared import inbound

from openenv_mcp.wire import sdk


def test_protocol_constants_are_the_sdks() -> None:
    from mcp_types.version import LATEST_MODERN_VERSION

    assert sdk.LATEST_VERSION == LATEST_MODERN_VERSION
    assert sdk.METHOD_HEADER == inbound.MCP_METHOD_HEADER
    assert sdk.NAME_HEADER == inbound.MCP_NAME_HEADER
    assert sdk.PROTOCOL_VERSION_HEADER == inbound.MCP_PROTOCOL_VERSION_HEADER
    assert dict(inbound.NAME_BEARING_METHODS) == sdk.NAME_BEARING_METHODS


@pytest.mark.parametrize(
    "value", ["tools/call", "plain ascii", " edge", "ünïcode", "=?base64?x?=", "a\tb", ""]
)
def test_header_values_are_encoded_as_the_sdk_does(value: str) -> None:
    assert sdk.encode_header_value(value) == inbound.encode_header_value(value)


def test_meta_keys_are_the_sdks() -> None:
    from mcp_types import _types

    assert sdk.VERSION_META == _types.PROTOCOL_VERSION_META_KEY
    assert sdk.CLIENT_INFO_META == _types.CLIENT_INFO_META_KEY
    assert sdk.CLIENT_CAPABILITIES_META == _types.CLIENT_CAPABILITIES_META_KEY
    assert sdk.SERVER_INFO_META == _types.SERVER_INFO_META_KEY


def test_fastmcp_internals_the_direct_paths_use_are_there() -> None:
    server = FastMCP("probe")
    assert callable(server._lifespan_manager)
    low = server._mcp_server
    assert callable(low.run) and callable(low.create_initialization_options)
    assert list(inspect.signature(low.run).parameters)[:3] == [
        "read_stream",
        "write_stream",
        "initialization_options",
    ]
    from fastmcp.server.context import Context, reset_transport, set_transport

    assert callable(set_transport) and callable(reset_transport)
    assert isinstance(Context.transport, property)
    assert sdk.request_transport() is None  # outside a request
    parsed = sdk.parse_jsonrpc({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert isinstance(parsed, mcp_types.JSONRPCRequest)
    assert sdk.session_message(parsed).message is parsed
