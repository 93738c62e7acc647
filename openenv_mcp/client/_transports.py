"""MCP transports for the client: one interface, JSON in and out.

A :class:`Transport` sends a JSON-RPC request and returns its ``result`` as a
plain dict (or raises :class:`RpcError` for a JSON-RPC error, and a
connection error when the link fails). The client reads each field it needs
from those dicts: no SDK models are built only to be read back.

* :class:`StdioTransport`: a server subprocess this transport starts, owns,
  stops and reaps; JSON lines over its pipes, read in linear time.
* :class:`HttpTransport`: Streamable HTTP, one POST per request on up to
  :data:`MAX_CONNECTIONS` kept-alive connections (concurrent calls in flight together).
* :class:`MemoryTransport`: a server object in this process, served through the
  same loop a stdio server runs (its direct path and FastMCP's stack), over
  in-memory lines.
* :class:`SdkTransport`: any FastMCP ``ClientTransport`` (SSE, custom auth...),
  through FastMCP's client.

The first three speak the sessionless 2026-07-28 protocol (``server/discover``,
then requests that carry their own ``_meta``). The general-purpose SDK client
costs about a millisecond per call (pydantic models of every message, a task
per request, and a stdio reader quadratic in the message size: a 2 MB batch of
frames spent 11 ms in it); a trainer makes one call per step.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import subprocess
import time
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from openenv_mcp._compat import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LATEST_VERSION,
    METHOD_HEADER,
    NAME_BEARING_METHODS,
    NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
    VERSION_META,
    encode_header_value,
    param_headers,
)
from openenv_mcp._version import __version__

__all__ = [
    "MAX_CONNECTIONS",
    "HttpTransport",
    "MemoryTransport",
    "RpcError",
    "SdkTransport",
    "StdioTransport",
    "Transport",
]

#: Longest message accepted from a server (bytes).
MAX_MESSAGE = 256 * 1024 * 1024
_STOP_GRACE = 5.0
#: Seconds after which a kept-alive HTTP connection is replaced before use.
_IDLE_RECONNECT = 2.0
#: Most HTTP connections one client keeps to a server (one request in flight on each).
MAX_CONNECTIONS = 32
_META = {
    VERSION_META: LATEST_VERSION,
    CLIENT_INFO_META: {"name": "openenv-mcp", "version": __version__},
    CLIENT_CAPABILITIES_META: {},
}
_METHOD_NOT_FOUND = -32601


class RpcError(Exception):
    """A JSON-RPC error answer: its code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Transport(ABC):
    """One MCP link: requests in, results (plain dicts) out."""

    @abstractmethod
    async def connect(self) -> None:
        """Open the link (start the server, where this transport owns it)."""

    @abstractmethod
    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request; return its ``result``.

        Raises:
            RpcError: the server answered with a JSON-RPC error.
            ConnectionError, OSError, EOFError: the link failed.
        """

    @abstractmethod
    async def close(self) -> None:
        """Release the link (and stop the server, where this transport owns it)."""

    def learn_tools(self, tools: dict[str, dict[str, Any]]) -> None:
        """Take note of the server's tools (their ``inputSchema``): HTTP mirrors the
        parameters they mark with ``x-mcp-header`` into ``Mcp-Param-*`` headers."""
        return None


class _Sessionless(Transport):
    """The sessionless protocol: every request carries its own envelope."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def _envelope(self, method: str, params: dict[str, Any] | None) -> tuple[int, bytes]:
        request_id = next(self._ids)
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": {**(params or {}), "_meta": _META},
        }
        return request_id, orjson.dumps(body)

    @staticmethod
    def _result(message: dict[str, Any]) -> dict[str, Any]:
        if "error" in message:
            error = message["error"]
            raise RpcError(int(error.get("code", -32603)), str(error.get("message", "error")))
        result: dict[str, Any] = message["result"]
        return result

    async def _discover(self) -> None:
        """Check the server speaks the sessionless protocol."""
        versions = (await self.request("server/discover")).get("supportedVersions", [])
        if LATEST_VERSION not in versions:
            raise RpcError(
                -32602, f"server supports protocol versions {versions}, not {LATEST_VERSION}"
            )


class _LineTransport(_Sessionless):
    """JSON-RPC over newline-delimited JSON: requests matched to replies by id."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._lost: BaseException | None = None

    @abstractmethod
    def _send_line(self, data: bytes) -> None:
        """Write one line (no newline in ``data``)."""

    async def _flush(self) -> None:
        """Wait until the written lines are on their way."""

    def _dispatch(self, message: dict[str, Any]) -> None:
        """Route a message from the server: a reply to its request, or answer its request."""
        if "id" in message and "method" not in message:
            future = self._pending.get(message["id"])
            if future is not None and not future.done():
                future.set_result(message)
        elif "id" in message:  # a request from the server: answer, never hang it
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            if message["method"] == "ping":
                reply["result"] = {}
            else:
                reply["error"] = {"code": _METHOD_NOT_FOUND, "message": "not supported"}
            self._send_line(orjson.dumps(reply))

    def _lose(self, exc: BaseException) -> None:
        """The link is gone: fail every request waiting for a reply, and later ones at once."""
        self._lost = exc if isinstance(exc, Exception) else ConnectionError(repr(exc))
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"lost the server: {self._lost}"))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._lost is not None:
            raise ConnectionError(f"lost the server: {self._lost}")
        request_id, body = self._envelope(method, params)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._send_line(body)
            await self._flush()
            return self._result(await future)
        finally:
            del self._pending[request_id]


class StdioTransport(_LineTransport):
    """A server subprocess this transport starts, owns, stops and reaps."""

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], stderr: Path | IO[Any] | None
    ) -> None:
        super().__init__()
        self.argv = list(argv)
        self.env = env
        self._stderr_path = stderr if isinstance(stderr, Path) else None
        self.stderr: IO[Any] | None = None if isinstance(stderr, Path) else stderr
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self.proc.pid if self.proc else None

    async def connect(self) -> None:
        if self._stderr_path is not None:
            self.stderr = self._stderr_path.open("a")  # closed in close()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr if self.stderr is not None else subprocess.DEVNULL,
            env=self.env,
            limit=MAX_MESSAGE,
            start_new_session=True,  # a Ctrl-C in the trainer's terminal is the trainer's
        )
        self._reader = asyncio.ensure_future(self._read())
        await self._discover()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while line := await stdout.readline():
                self._dispatch(orjson.loads(line))
            raise ConnectionError("the server closed its stdout (exited?)")
        except BaseException as exc:
            self._lose(exc)
            if not isinstance(exc, Exception):
                raise

    def _send_line(self, data: bytes) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise ConnectionError("not connected")
        self.proc.stdin.write(data + b"\n")

    async def _flush(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        await self.proc.stdin.drain()

    async def close(self) -> None:
        """Close stdin (the server exits at EOF), then terminate and kill if it lingers."""
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        for stop in (None, proc.terminate, proc.kill):
            if stop is not None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            try:
                await asyncio.wait_for(proc.wait(), _STOP_GRACE)
                break
            except TimeoutError:
                continue
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if self._stderr_path is not None and self.stderr is not None:
            self.stderr.close()

    def __repr__(self) -> str:
        return f"<StdioTransport {self.argv!r}>"


class MemoryTransport(_LineTransport):
    """A server object made by ``build_server``, served in this process.

    The server runs the loop a stdio server runs (its direct path for tool
    calls, FastMCP's stack for the rest) on a task of this event loop, fed
    lines through memory: in-memory tests exercise the stdio server's own path.
    """

    def __init__(self, server: Any) -> None:
        super().__init__()
        self.server = server
        self._task: asyncio.Task[None] | None = None
        self._send: Any = None
        self._receive: Any = None

    async def connect(self) -> None:
        import anyio

        from openenv_mcp.server import get_app
        from openenv_mcp.server._stdio import LineConnection

        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._send, self._receive = send, receive
        connection = LineConnection(self.server, get_app(self.server), self._on_line, "memory")

        async def lines() -> AsyncIterator[bytes | ValueError]:
            async with receive:
                async for line in receive:
                    yield line

        self._task = asyncio.ensure_future(connection.serve(lines()))
        self._task.add_done_callback(self._ended)
        await self._discover()

    def _on_line(self, data: bytes) -> None:
        self._dispatch(orjson.loads(data))

    def _ended(self, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        self._lose(error or ConnectionError("the in-memory server stopped"))

    def _send_line(self, data: bytes) -> None:
        if self._send is None:
            raise ConnectionError("not connected")
        self._send.send_nowait(data + b"\n")

    async def close(self) -> None:
        """End the input: the server answers what is in flight, then its loop ends."""
        if self._send is not None:
            self._send.close()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._task), _STOP_GRACE)
            if not self._task.done():
                self._task.cancel()
        if self._receive is not None:
            self._receive.close()

    def __repr__(self) -> str:
        return f"<MemoryTransport {getattr(self.server, 'name', self.server)!r}>"


class HttpTransport(_Sessionless):
    """MCP over Streamable HTTP: one POST per request on a kept-alive connection.

    A minimal HTTP/1.1 client on asyncio streams (a general HTTP client costs
    about 0.8 ms a request here, most of a step): one request at a time per
    connection, and up to :data:`MAX_CONNECTIONS` kept-alive connections, so
    concurrent calls (a group of episodes gathered) are in flight together;
    replies as JSON or as a server-sent-event stream, bodies by
    ``Content-Length`` or chunked.
    """

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http(s):// URL, got {url!r}")
        self.url = url
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._tls = parts.scheme == "https"
        self._path = parts.path or "/"
        netloc = parts.netloc.rsplit("@", 1)[-1]
        self._headers = {
            "host": netloc,
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            PROTOCOL_VERSION_HEADER: LATEST_VERSION,
            **{k.lower(): v for k, v in (headers or {}).items()},
        }
        #: Kept-alive connections not in use, with when each was last used.
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self._open: set[asyncio.StreamWriter] = set()
        self._connections = asyncio.Semaphore(MAX_CONNECTIONS)
        #: Input schemas of the tools whose calls carry ``Mcp-Param-*`` headers.
        self._header_schemas: dict[str, Any] = {}

    def learn_tools(self, tools: dict[str, dict[str, Any]]) -> None:
        self._header_schemas = {
            name: tool["inputSchema"]
            for name, tool in tools.items()
            if '"x-mcp-header"' in orjson.dumps(tool.get("inputSchema", {})).decode()
        }

    async def connect(self) -> None:
        await self._discover()

    async def _checkout(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        # Servers drop idle keep-alive connections (uvicorn after 5 s); a reply
        # lost that way cannot be told from a step that never ran, so an idle
        # connection is replaced before it is used, not after it fails.
        while self._idle:
            reader, writer, last_used = self._idle.pop()
            if not reader.at_eof() and time.monotonic() - last_used <= _IDLE_RECONNECT:
                return reader, writer
            await self._drop(writer)
        reader, writer = await asyncio.open_connection(
            self._host, self._port, ssl=self._tls or None, limit=MAX_MESSAGE
        )
        self._open.add(writer)
        return reader, writer

    async def _drop(self, writer: asyncio.StreamWriter) -> None:
        self._open.discard(writer)
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id, body = self._envelope(method, params)
        # The sessionless protocol routes on headers that must mirror the body.
        headers = {**self._headers, METHOD_HEADER: method, "content-length": str(len(body))}
        name_key = NAME_BEARING_METHODS.get(method)
        if name_key is not None and params and name_key in params:
            headers[NAME_HEADER] = encode_header_value(str(params[name_key]))
            schema = self._header_schemas.get(params[name_key]) if self._header_schemas else None
            if schema is not None and method == "tools/call":
                headers.update(param_headers(schema, params.get("arguments") or {}))
        head = f"POST {self._path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        async with self._connections:
            reader, writer = await self._checkout()
            try:
                writer.write(head.encode("latin-1") + b"\r\n" + body)
                status, reply_headers, payload = await _read_response(reader)
            except BaseException:
                await self._drop(writer)
                raise
            if reply_headers.get("connection", "").lower() == "close":
                await self._drop(writer)
            else:
                self._idle.append((reader, writer, time.monotonic()))
        if status >= 400:
            raise RpcError(-32600, f"HTTP {status} from {self.url}: {payload[:300]!r}")
        return self._result(_http_message(reply_headers, payload, request_id))

    async def close(self) -> None:
        self._idle.clear()
        for writer in list(self._open):
            await self._drop(writer)

    def __repr__(self) -> str:
        return f"<HttpTransport {self.url}>"


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and body of one HTTP/1.1 response."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection")
    status = int(status_line.split(b" ", 2)[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        return status, headers, await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while size := int((await reader.readline()).split(b";")[0], 16):
            chunks.append(await reader.readexactly(size))
            await reader.readline()
        await reader.readline()  # the blank line after the last chunk
        return status, headers, b"".join(chunks)
    return status, headers, await reader.read()


def _http_message(headers: dict[str, str], payload: bytes, request_id: int) -> dict[str, Any]:
    """The JSON-RPC reply in a JSON body or in a server-sent-event stream."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        for event in payload.decode().replace("\r\n", "\n").split("\n\n"):
            data = "".join(
                line[5:].lstrip() for line in event.splitlines() if line.startswith("data:")
            )
            if data:
                message = orjson.loads(data)
                if message.get("id") == request_id:
                    return dict(message)
        raise ConnectionError(f"no reply to request {request_id} in the event stream")
    return dict(orjson.loads(payload))


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
                raise RpcError(_METHOD_NOT_FOUND, f"{method} is not supported over this transport")
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
