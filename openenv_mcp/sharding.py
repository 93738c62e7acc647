"""Where an episode lives, when many servers share one address.

A sharded server (``ServerSettings.shard``: a Ray Serve replica, a StatefulSet's
pod) mints handles that name it, ``ep_<128 random bits>@<shard>``, still
unguessable. Every tool parameter that names where a call must go is marked
``"x-mcp-header": "Route"`` in its schema, so MCP clients copy it into an
``Mcp-Param-Route`` header (MCP 2026-07-28, Streamable HTTP) and a proxy routes on
that header alone, without reading bodies: a handle routes to its shard, a bare
shard (``reset``'s and ``step_batch``'s ``shard`` parameter) to itself. This
module is plain Python: the Ray router and the clients share it, and nothing
here imports Ray.
"""

from __future__ import annotations

import re

__all__ = [
    "ROUTE_HEADER",
    "ROUTE_TOKEN",
    "SHARD_PATTERN",
    "route_shard",
    "shard_of",
    "with_shard",
]

#: The ``x-mcp-header`` token of routing parameters; clients send ``Mcp-Param-Route``.
ROUTE_TOKEN = "Route"
#: The HTTP header a proxy routes on (lower case, as ASGI and Ray see it).
ROUTE_HEADER = f"mcp-param-{ROUTE_TOKEN.lower()}"
#: A shard's name: letters, digits and '-', as in a pod ordinal or a Ray replica id.
SHARD_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,62}$"
_SHARD = re.compile(SHARD_PATTERN)


def with_shard(handle: str, shard: str | None) -> str:
    """``handle`` as a sharded server mints it (unchanged without a shard)."""
    return handle if shard is None else f"{handle}@{shard}"


def shard_of(handle: str) -> str | None:
    """The shard a handle names, or ``None`` for a handle of an unsharded server."""
    _, at, shard = handle.rpartition("@")
    return shard if at and _SHARD.match(shard) else None


def route_shard(route: str) -> str | None:
    """The shard a routing header's value asks for: a handle's shard, or a bare shard."""
    if "@" in route:
        return shard_of(route)
    return route if _SHARD.match(route) else None
