"""The client's MCP transports, one file each (fastmcp's ``client/transports`` in our
shape): :mod:`.stdio` (a server subprocess this client owns), :mod:`.http`
(Streamable HTTP, a lean HTTP/1.1 client), :mod:`.memory` (a server object in this
process, through the stdio server's own loop), :mod:`.sdk` (any FastMCP
``ClientTransport``); :mod:`.base` is their interface and :mod:`.inference` picks
one from a target.

The general-purpose SDK client costs about a millisecond per call (pydantic models
of every message, a task per request, and a stdio reader quadratic in the message
size: a 2 MB batch of frames spent 11 ms in it); a trainer makes one call per step.
"""

from __future__ import annotations

from openenv_mcp.client._transports.base import RpcError, Transport
from openenv_mcp.client._transports.http import MAX_CONNECTIONS, HttpTransport
from openenv_mcp.client._transports.inference import (
    Target,
    describe_target,
    is_command,
    transport_for,
)
from openenv_mcp.client._transports.memory import MemoryTransport
from openenv_mcp.client._transports.sdk import SdkTransport
from openenv_mcp.client._transports.stdio import StdioTransport

__all__ = [
    "MAX_CONNECTIONS",
    "HttpTransport",
    "MemoryTransport",
    "RpcError",
    "SdkTransport",
    "StdioTransport",
    "Target",
    "Transport",
    "describe_target",
    "is_command",
    "transport_for",
]
