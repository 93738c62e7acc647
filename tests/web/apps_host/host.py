"""The MCP Apps test host's server: the host page, and its MCP calls forwarded over real MCP.

A chat client that supports MCP Apps holds the MCP connection itself and renders the
view beside it; this process plays the connection's half. It starts the given server
command as a stdio subprocess through the stock ``mcp`` SDK client, announcing the UI
extension (``io.modelcontextprotocol/ui``), and serves on loopback:

* ``GET /``: the host page (``host.html``), ``GET /host.js``: its bundled module
  (``scripts/ensure_apps_host.sh`` builds it from ``host.js`` and ext-apps' app-bridge);
* ``POST /mcp``: ``{"method": ..., "params": ...}`` for ``tools/list``, ``tools/call``,
  ``resources/list`` and ``resources/read``, answered ``{"result": ...}`` (the MCP
  result as the wire carries it) or ``{"error": ...}`` with status 400 or 502;
* ``GET /calls``: every call forwarded so far, in order (what a test counts).

Why a forwarder rather than the page speaking Streamable HTTP to the server: our HTTP
server refuses requests from a page of another origin and grants no CORS (its
DNS-rebinding guard), and a real host keeps the connection on its side anyway.

Usage: ``python -m tests.web.apps_host.host --bundle FILE -- SERVER COMMAND...``; once the
MCP connection is up it prints ``HOST=http://127.0.0.1:PORT/`` on stdout. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn
from mcp import StdioServerParameters
from mcp.client import Client, advertise
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

HERE = Path(__file__).resolve().parent
UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
METHODS = ("tools/list", "tools/call", "resources/list", "resources/read")
#: The largest request body the page may send (a tool call's arguments).
MAX_BODY = 1 << 20

log = logging.getLogger("apps_host")


def _wire(result: Any) -> Any:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


class Forwarder:
    """The host's MCP connection: one stock SDK client, every call logged."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls: list[dict[str, Any]] = []
        # One call at a time on the connection, as a chat client's turn-by-turn use does;
        # it keeps the log's order the server's order.
        self.lock = asyncio.Lock()

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Forward one call (its params checked first: only well-formed calls are sent and
        logged); its result as the wire carries it."""
        if method == "tools/call":
            name, arguments = _text(params, "name"), params.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ValueError(
                    f"tools/call params.arguments must be an object, got {type(arguments).__name__}"
                )
        elif method == "resources/read":
            uri = _text(params, "uri")
        async with self.lock:
            self.calls.append({"method": method, "params": params})
            log.info("-> %s %s", method, json.dumps(params)[:200])
            if method == "tools/list":
                return _wire(await self.client.list_tools())
            if method == "resources/list":
                return _wire(await self.client.list_resources())
            if method == "resources/read":
                return _wire(await self.client.read_resource(uri))
            return _wire(await self.client.call_tool(name, arguments))


def _text(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"params.{key} must be a non-empty string, got {value!r}")
    return value


def build_app(forwarder: Forwarder, bundle: Path) -> Starlette:
    async def page(request: Request) -> Response:
        return FileResponse(HERE / "host.html", media_type="text/html")

    async def module(request: Request) -> Response:
        return FileResponse(bundle, media_type="text/javascript")

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    async def calls(request: Request) -> Response:
        return JSONResponse(forwarder.calls)

    async def mcp(request: Request) -> Response:
        # Only this page may drive the server: another origin's page (any local web app)
        # gets a 403, and a "simple" cross-origin request (no JSON type) a 415.
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.url.netloc}"
        if origin is not None and origin != own:
            return JSONResponse(
                {"error": f"requests from another origin ({origin!r}) are refused; only {own}"},
                status_code=403,
            )
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return JSONResponse(
                {"error": f"expected content-type application/json, got {kind or 'none'!r}"},
                status_code=415,
            )
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"error": f"body over {MAX_BODY} bytes"}, status_code=413)
        try:
            message = json.loads(body)
        except ValueError as exc:
            return JSONResponse({"error": f"expected a JSON object, got: {exc}"}, status_code=400)
        if not isinstance(message, dict):
            return JSONResponse(
                {"error": f"expected a JSON object, got {type(message).__name__}"}, status_code=400
            )
        method, params = message.get("method"), message.get("params", {})
        if method not in METHODS:
            return JSONResponse(
                {"error": f"method must be one of {', '.join(METHODS)}; got {method!r}"},
                status_code=400,
            )
        if not isinstance(params, dict):
            return JSONResponse(
                {"error": f"params must be an object, got {type(params).__name__}"},
                status_code=400,
            )
        try:
            result = await forwarder.call(method, params)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except Exception as exc:  # the server's own error, passed on to the page
            log.warning("%s failed: %s", method, exc)
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=502)
        return JSONResponse({"result": result})

    return Starlette(
        routes=[
            Route("/", page),
            Route("/host.js", module),
            Route("/calls", calls),
            Route("/favicon.ico", no_icon),
            Route("/mcp", mcp, methods=["POST"]),
        ]
    )


async def serve(command: list[str], bundle: Path, port: int) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    ui = advertise(UI_EXTENSION, {"mimeTypes": [APP_MIME_TYPE]})
    # No response cache: every call the page makes reaches the server (and is counted).
    async with Client(params, extensions=[ui], cache=None, read_timeout_seconds=120) as client:
        forwarder = Forwarder(client)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
            sock.listen(64)
            config = uvicorn.Config(
                build_app(forwarder, bundle), log_level="warning", lifespan="off"
            )
            server = uvicorn.Server(config)
            started = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not started.done():
                await asyncio.sleep(0.02)
            print(f"HOST=http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
            await started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True, help="the bundled host module")
    parser.add_argument("--port", type=int, default=0, help="loopback port (0: any free one)")
    parser.add_argument("command", nargs="+", help="the MCP server's stdio command")
    args = parser.parse_args(argv)
    if not args.bundle.is_file():
        parser.error(
            f"--bundle {args.bundle} is not a file (scripts/ensure_apps_host.sh builds it)"
        )
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="[apps host] %(message)s")
    asyncio.run(serve(args.command, args.bundle, args.port))


if __name__ == "__main__":
    main()
