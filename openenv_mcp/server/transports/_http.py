"""HTTP safety for local servers (MCP security guidance): loopback by default,
Host/Origin validation against DNS rebinding, an optional bearer token (required
off loopback), and a bound on request size.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from openenv_mcp.errors import ArgumentError
from openenv_mcp.server.episodes._episodes import current_client
from openenv_mcp.server.tools._direct import DirectCalls, dumps
from openenv_mcp.server.transports._logs import Throttle
from openenv_mcp.server.transports._token import TOKEN_ENV
from openenv_mcp.wire.exactjson import loads_exact
from openenv_mcp.wire.sdk import (
    METHOD_HEADER,
    NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
    VERSION_META,
    param_headers_mismatch,
)

if TYPE_CHECKING:
    from openenv_mcp.server._app import EnvApp

__all__ = [
    "HEALTH_PATH",
    "MAX_BODY",
    "MCP_PATH",
    "OPENENV_PATH",
    "TOKEN_ENV",
    "DirectPath",
    "basic_token_ok",
    "guarded_app",
    "http_run_options",
    "is_loopback",
    "mount_health",
]

log = logging.getLogger("openenv_mcp.server")
#: Refused WebSocket handshakes, logged at most once per ten seconds.
_refusals = Throttle(log)

#: Where the MCP endpoint is served.
MCP_PATH = "/mcp"
#: Where OpenEnv's protocol is served (``serve --openenv``): its clients' base URL.
OPENENV_PATH = "/openenv"

#: A GET that answers while the server is up (container health checks, probes): the
#: one route that needs no token, and says nothing but that it is up.
HEALTH_PATH = "/healthz"
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
    """Who is calling, the bearer token (when set), the Origin rule and the body size,
    checked before any route sees a request or a WebSocket handshake.

    FastMCP's Host/Origin guard sees plain HTTP only; a handshake (``/openenv/ws``)
    meets the same rules here: the Host names this server, the token, and the caller
    is counted for the per-client caps like any request.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        max_body: int = MAX_BODY,
        allowed_hosts: Sequence[str] = ("127.0.0.1", "localhost", "[::1]"),
    ) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body = max_body
        self.allowed_hosts = {_host_of(h) for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        # Who is calling, for the per-client caps (episodes, snapshots): the client's
        # address as uvicorn gives it (X-Forwarded-For counts only from
        # FORWARDED_ALLOW_IPS), over a socket as over a request.
        client = scope.get("client")
        reset = current_client.set(str(client[0]) if client else "unknown")
        try:
            if kind == "websocket":
                await self._guard_socket(scope, receive, send)
            else:
                await self._guard(scope, receive, send)
        finally:
            current_client.reset(reset)

    def _token_refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> str | None:
        """Why the request lacks the token (naming how to give it), or ``None``."""
        if self.token is None or scope.get("path") == HEALTH_PATH:
            return None
        given = headers.get(b"authorization", b"")
        if (
            hmac.compare_digest(given, b"Bearer " + self.token)
            or _page_token(scope, headers, self.token)
            or _openenv_token(scope, given, self.token)
        ):
            return None
        what = "a wrong bearer token" if given else "no Authorization header"
        how = "'Authorization: Bearer <token>'"
        path = str(scope.get("path", ""))
        if path.startswith("/web"):
            how += " (a browser: open /web/?token=<token>)"
        elif path.startswith(OPENENV_PATH):
            how += " (or http://any:TOKEN@host as the base URL)"
        return f"{what}: this server requires {how}"

    async def _guard_socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        why = None
        if _host_of(host) not in self.allowed_hosts:
            why = f"Host {host!r} is not one this server answers to"
        elif not _same_origin(headers, scope):
            why = _cross_origin(headers, "a WebSocket")
        else:
            why = self._token_refusal(scope, headers)
        if why is None:
            await self.app(scope, receive, send)
            return
        # Strangers choose how often this happens: one line per ten seconds, counted.
        _refusals.log(logging.WARNING, "socket", "WebSocket to %s refused: %s", scope["path"], why)
        # Before accepting, a close is answered as HTTP 403 with no body: the reason
        # goes in the close frame for clients that read it, and to the log.
        await send({"type": "websocket.close", "code": 1008, "reason": why[:120]})

    async def _guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        why = self._token_refusal(scope, headers)
        if why is not None:
            await _reject(send, 401, why, [(b"www-authenticate", b"Bearer")])
            return
        # A page of another origin can send a "simple" request (text/plain, a form, no
        # type) with no CORS preflight: its effects happen although the page cannot
        # read the answer. Anything else needs a preflight, which this server never
        # approves, so on every route only simple requests need refusing here.
        if (
            scope.get("method") not in _SAFE_METHODS
            and not _same_origin(headers, scope)
            and _media_type(headers) != b"application/json"
        ):
            await _reject(send, 403, _cross_origin(headers, "a request"), [])
            return
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.max_body:
                await self._too_large(send, length.decode(errors="replace"))
                return
            await self.app(scope, receive, send)  # the server holds the body to its length
            return
        # No Content-Length (a chunked body): read it up to the limit before passing it on.
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await self._too_large(send, f"over {self.max_body}")
                return
            more = message.get("more_body", False)
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _too_large(self, send: Send, size: str) -> None:
        await _reject(send, 413, f"request body of {size} bytes; the limit is {self.max_body}", [])


class DirectPath:
    """Answer sessionless ``tools/call`` POSTs for this server's own tools directly.

    FastMCP's Streamable HTTP stack costs a couple of milliseconds a request;
    a trainer stepping over HTTP pays that per step. A 2026-07-28 request is
    self-describing (``_meta`` and the ``Mcp-*`` routing headers), so a call of
    one of our tools is answered here as one JSON response, exactly the result
    the standard stack would send. Everything else (other methods, other eras,
    anything malformed) goes to the standard stack untouched. This sits inside
    the Host/Origin guard and :class:`GuardMiddleware`, so it serves only
    requests that passed them.
    """

    def __init__(self, app: ASGIApp, direct: DirectCalls) -> None:
        self.app = app
        self.direct = direct

    async def answer(self, body: bytes, headers: dict[str, str]) -> bytes | None:
        """A POST body's response, or ``None`` to leave it to the standard stack.

        Only sessionless (2026-07-28) calls qualify: their routing headers must
        mirror the body, as the standard stack requires.
        """
        try:
            message = loads_exact(body)
        except ValueError:
            return None
        found = self.direct.match(message)
        if found is None:
            return None
        request_id, params = found
        meta = params.get("_meta")
        version = meta.get(VERSION_META) if isinstance(meta, dict) else None
        if (
            version is None
            or headers.get(PROTOCOL_VERSION_HEADER) != version
            or headers.get(METHOD_HEADER) != "tools/call"
            or headers.get(NAME_HEADER) != params["name"]
        ):
            return None
        schema = self.direct.header_schemas.get(params["name"])
        if schema is not None and param_headers_mismatch(
            schema, params.get("arguments") or {}, headers
        ):
            return None  # the standard stack answers the spec's 400
        return dumps(await self.direct.run(request_id, params))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != MCP_PATH:
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay(body, receive, message), send)
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        reply = await self.answer(body, headers)
        if reply is None:
            await self.app(scope, _replay(body, receive), send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(reply)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": reply})


#: Methods that change nothing: a page of another origin may send them (it cannot read
#: the answer without CORS, which this server never grants).
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _host_of(value: str) -> str:
    """A Host header's (or host name's) host, lower case, without the port."""
    host = value.strip().lower()
    if host.startswith("["):
        return host[: host.index("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same_origin(headers: dict[bytes, bytes], scope: Scope) -> bool:
    """Whether the request carries no Origin (no browser page sent it) or its page is
    this server's own: scheme, host and port as the request addressed them.

    Another loopback origin is another origin: any local web app (a dev server on
    localhost:3000) has one, and must not drive this server's episodes."""
    origin = headers.get(b"origin")
    if origin is None:
        return True
    scheme = str(scope.get("scheme", "http"))
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    own = f"{scheme}://{headers.get(b'host', b'').decode('latin-1')}".lower()
    return origin.decode("latin-1").strip().rstrip("/").lower() == own


def _cross_origin(headers: dict[bytes, bytes], what: str) -> str:
    origin = headers.get(b"origin", b"").decode("latin-1")
    return (
        f"{what} from another origin ({origin!r}) is refused: only this server's own "
        "pages, or clients that send no Origin (and JSON, for requests), may act here"
    )


def _media_type(headers: dict[bytes, bytes]) -> bytes:
    return headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()


def _page_token(scope: Scope, headers: dict[bytes, bytes], token: bytes) -> bool:
    """Whether a request for the web page carries the token the way a browser can: the
    page itself as ``/web/?token=T`` (the address a person opens), its own requests
    in the cookie that page set (``SameSite=Strict``: no other site's page sends it).
    Only under ``/web``: ``/mcp`` takes the Authorization header alone."""
    path: str = scope.get("path", "")
    if not (path == "/web" or path.startswith("/web/")):
        return False
    for given in _cookies(headers.get(b"cookie", b"")):
        if hmac.compare_digest(given, token):
            return True
    if path in ("/web", "/web/") and scope.get("method") == "GET":
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return any(hmac.compare_digest(v.encode(), token) for v in query.get("token", []))
    return False


def _openenv_token(scope: Scope, given: bytes, token: bytes) -> bool:
    """Whether a request for OpenEnv's routes carries the token as HTTP Basic credentials
    (its password): OpenEnv's clients and validator cannot set a header, but take a base
    URL with ``user:password@``. Only under :data:`OPENENV_PATH`."""
    path: str = scope.get("path", "")
    if not (path == OPENENV_PATH or path.startswith(OPENENV_PATH + "/")):
        return False
    return basic_token_ok(given.decode("latin-1"), token.decode())


def basic_token_ok(authorization: str, token: str) -> bool:
    """Whether an ``Authorization: Basic ...`` header's password is ``token`` (any user)."""
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    password = decoded.partition(":")[2]
    return hmac.compare_digest(password.encode(), token.encode())


def _cookies(header: bytes) -> list[bytes]:
    """The values of every token cookie in a Cookie header."""
    found = []
    for part in header.split(b";"):
        name, _, value = part.strip().partition(b"=")
        if name == b"openenv_mcp_token":
            found.append(value)
    return found


def _replay(body: bytes, receive: Receive, pending: Any = None) -> Receive:
    """A receive that yields the body already read, then carries on with ``receive``."""
    queue = [{"type": "http.request", "body": body, "more_body": False}]
    if pending is not None:
        queue.append(pending)

    async def replay() -> Any:
        return queue.pop(0) if queue else await receive()

    return replay


def http_run_options(
    host: str,
    token: str | None,
    direct: DirectCalls | None = None,
    allowed_hosts: Sequence[str] = (),
) -> dict[str, Any]:
    """Keyword arguments for FastMCP's ``run_http_async`` that make it safe (and fast).

    Raises:
        ArgumentError: binding off loopback without a token.
    """
    if not is_loopback(host) and not token:
        raise ArgumentError(
            f"binding {host!r} exposes the server beyond this machine, so it needs a bearer "
            f"token: set {TOKEN_ENV} or pass --auth-token-file PATH"
        )
    hosts = ["127.0.0.1", "localhost", "[::1]", *allowed_hosts]
    if not is_loopback(host):
        hosts.append(host)
    middleware = [Middleware(GuardMiddleware, token=token, allowed_hosts=hosts)]
    if direct is not None:
        middleware.append(Middleware(DirectPath, direct=direct))
    return {
        "path": MCP_PATH,
        "host_origin_protection": True,
        "allowed_hosts": hosts,
        "middleware": middleware,
    }


def mount_health(server: FastMCP, app: EnvApp) -> None:
    """Answer ``GET /healthz`` on ``server``'s HTTP app: 200, the env's name and its live
    episodes; ``status`` is ``degraded`` (with why) while recording fails."""
    name = app.env_cls.name

    async def health(request: Request) -> Response:
        table = app.table
        answer: dict[str, Any] = {"status": "ok", "env": name, "episodes": len(table.episodes)}
        if table.recording_problem is not None:
            answer.update(status="degraded", recording=table.recording_problem)
        return Response(json.dumps(answer), media_type="application/json")

    server.custom_route(HEALTH_PATH, methods=["GET"])(health)


def guarded_app(
    server: FastMCP,
    host: str,
    token: str | None,
    direct: DirectCalls | None = None,
    allowed_hosts: Sequence[str] = (),
) -> Any:
    """``server``'s Streamable HTTP app behind the same guard as ``serve --transport http``
    (Host/Origin, token, body size, the direct path): what a viewer beside a stdio
    server runs, and what tests drive in memory."""
    options = http_run_options(host, token, direct, allowed_hosts)
    return server.http_app(
        path=MCP_PATH,
        transport="http",
        middleware=options["middleware"],
        host_origin_protection=True,
        allowed_hosts=options["allowed_hosts"],
    )
