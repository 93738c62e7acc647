"""What ``openenv-mcp serve`` serves over: the transports as objects (stdio, http, ray),
each holding its own settings group and serving one environment.

It stands above the server stack and the Ray cluster package, which it starts, and
below the CLI, which picks one; it imports neither until a transport serves.
"""

from __future__ import annotations

from openenv_mcp.serving._transports import (
    SERVING,
    HttpBind,
    HttpTransport,
    RayTransport,
    Served,
    ServeFailed,
    StdioTransport,
    choose_transport,
    transport_for,
)

__all__ = [
    "SERVING",
    "HttpBind",
    "HttpTransport",
    "RayTransport",
    "ServeFailed",
    "Served",
    "StdioTransport",
    "choose_transport",
    "transport_for",
]
