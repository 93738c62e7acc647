"""HTTP safety for local servers (MCP security guidance): loopback by default,
Host/Origin validation against DNS rebinding, an optional bearer token (required
off loopback), and a bound on request size.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any

from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from openenv_mcp.errors import ArgumentError

__all__ = ["MAX_BODY", "TOKEN_ENV", "http_run_options", "is_loopback"]

#: Environment variable holding the bearer token when --auth-token is not given.
TOKEN_ENV = "OPENENV_MCP_AUTH_TOKEN"
#: Largest request body accepted (bytes).
MAX_BODY = 16 * 1024 * 1024


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _reject(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]]
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """Bearer token (when set) and body size, checked before MCP sees a request."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.token is not None:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, b"Bearer " + self.token):
                what = "a wrong bearer token" if given else "no Authorization header"
                await _reject(
                    send,
                    401,
                    f"this server requires 'Authorization: Bearer <token>'; got {what}",
                    [(b"www-authenticate", b"Bearer")],
                )
                return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _reject(
                send,
                413,
                f"request body of {length.decode(errors='replace')} bytes; the limit is "
                f"{self.max_body}",
                [],
            )
            return
        await self.app(scope, _limited(receive, self.max_body), send)


def _limited(receive: Receive, limit: int) -> Receive:
    """Cut off chunked bodies that grow past ``limit`` (no Content-Length to check)."""
    seen = 0

    async def wrapped() -> Any:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise ValueError(f"request body over {limit} bytes")
        return message

    return wrapped


def http_run_options(host: str, token: str | None) -> dict[str, Any]:
    """Keyword arguments for FastMCP's ``run_http_async`` that make it safe.

    Raises:
        ArgumentError: binding off loopback without a token.
    """
    if not is_loopback(host) and not token:
        raise ArgumentError(
            f"binding {host!r} exposes the server beyond this machine, so it needs a bearer "
            f"token: pass --auth-token TOKEN or set {TOKEN_ENV}"
        )
    allowed_hosts = ["127.0.0.1", "localhost", "[::1]"]
    if not is_loopback(host):
        allowed_hosts.append(host)
    return {
        "host_origin_protection": True,
        "allowed_hosts": allowed_hosts,
        "middleware": [Middleware(GuardMiddleware, token=token)],
    }
