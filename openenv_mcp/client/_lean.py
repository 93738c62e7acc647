"""Lean MCP client transports for the stepping hot path: stdio and Streamable HTTP.

The general-purpose SDK client costs about a millisecond per call (pydantic
models of every message, a task per request, and a stdio reader that is
quadratic in the message size: a 2 MB batch of frames spent 11 ms in it).
A trainer's loop makes one call per step, so these transports speak the same
standard MCP with less machinery: the sessionless 2026-07-28 protocol
(``server/discover``, then requests that carry their own ``_meta``), JSON lines
over a pipe read in linear time, or one HTTP POST per call on a kept-alive
connection. Results are built without re-validation; the client reads each
field it uses itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import subprocess
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import mcp_types
import orjson
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp_types.version import LATEST_MODERN_VERSION

from openenv_mcp import __version__

__all__ = ["LeanHttp", "LeanStdio", "LeanTransport", "call_tool_result"]

#: Longest message accepted from a server (bytes).
MAX_MESSAGE = 256 * 1024 * 1024
_STOP_GRACE = 5.0
#: Seconds after which a kept-alive HTTP connection is replaced before use.
_IDLE_RECONNECT = 2.0
#: Most HTTP connections one client keeps to a server (one request in flight on each).
MAX_CONNECTIONS = 32
_META = {
    "io.modelcontextprotocol/protocolVersion": LATEST_MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "openenv-mcp", "version": __version__},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call_tool_result(result: dict[str, Any]) -> mcp_types.CallToolResult:
    """A ``CallToolResult`` from wire JSON, without re-validating the payload."""
    blocks: list[Any] = []
    for block in result.get("content", []):
        if block.get("type") == "image":
            blocks.append(
                mcp_types.ImageContent.model_construct(
                    type="image", data=block["data"], mime_type=block.get("mimeType", "")
                )
            )
        elif block.get("type") == "text":
            blocks.append(mcp_types.TextContent.model_construct(type="text", text=block["text"]))
        else:
            blocks.append(mcp_types.ContentBlock.model_validate(block))  # type: ignore[attr-defined]
    return mcp_types.CallToolResult.model_construct(
        content=blocks,
        structured_content=result.get("structuredContent"),
        is_error=bool(result.get("isError", False)),
        meta=result.get("_meta"),
    )


class LeanTransport:
    """The protocol half: requests, and the few typed answers the client needs."""

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
            raise MCPError(error.get("code", -32603), error.get("message", "error"))
        result: dict[str, Any] = message["result"]
        return result

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request; return its ``result`` (or raise :class:`MCPError`)."""
        raise NotImplementedError

    async def connect(self) -> None:
        """Open the link and check the server speaks the sessionless protocol."""
        discovered = await self.request("server/discover")
        versions = discovered.get("supportedVersions", [])
        if LATEST_MODERN_VERSION not in versions:
            raise MCPError(
                -32602,
                f"server supports protocol versions {versions}, not {LATEST_MODERN_VERSION}",
            )

    # The part of fastmcp's Client that Connection uses -------------------------------

    async def list_resources(self) -> list[mcp_types.Resource]:
        result = await self.request("resources/list")
        return [mcp_types.Resource.model_validate(r) for r in result.get("resources", [])]

    async def read_resource(self, uri: str) -> list[mcp_types.TextResourceContents]:
        result = await self.request("resources/read", {"uri": uri})
        return [
            mcp_types.TextResourceContents.model_validate(c)
            for c in result.get("contents", [])
            if "text" in c
        ]

    async def list_tools(self) -> list[mcp_types.Tool]:
        result = await self.request("tools/list")
        return [mcp_types.Tool.model_validate(t) for t in result.get("tools", [])]

    async def close(self) -> None:
        """Release the link (and the server process, where this transport owns it)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        return call_tool_result(
            await self.request("tools/call", {"name": name, "arguments": arguments})
        )


class LeanStdio(LeanTransport):
    """An MCP client over a subprocess it starts, owns, stops and reaps."""

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], stderr: Path | IO[Any] | None
    ) -> None:
        super().__init__()
        self.argv = list(argv)
        self.env = env
        self._stderr_path = stderr if isinstance(stderr, Path) else None
        self.stderr: IO[Any] | None = None if isinstance(stderr, Path) else stderr
        self.proc: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._lost: BaseException | None = None

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
        await super().connect()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while line := await stdout.readline():
                message = orjson.loads(line)
                if "id" in message and "method" not in message:
                    future = self._pending.get(message["id"])
                    if future is not None and not future.done():
                        future.set_result(message)
                elif "id" in message:  # a request from the server: answer, never hang it
                    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
                    if message["method"] == "ping":
                        reply["result"] = {}
                    else:
                        reply["error"] = {"code": -32601, "message": "not supported"}
                    self._write(orjson.dumps(reply))
            raise ConnectionError("the server closed its stdout (exited?)")
        except BaseException as exc:
            self._lost = exc if isinstance(exc, Exception) else ConnectionError(repr(exc))
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError(f"lost the server: {self._lost}"))
            if not isinstance(exc, Exception):
                raise

    def _write(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._lost is not None:
            raise ConnectionError(f"lost the server: {self._lost}")
        if self.proc is None or self.proc.stdin is None:
            raise ConnectionError("not connected")
        request_id, body = self._envelope(method, params)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._write(body)
            await self.proc.stdin.drain()
            return self._result(await future)
        finally:
            del self._pending[request_id]

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


class LeanHttp(LeanTransport):
    """An MCP client over Streamable HTTP: one POST per request on a kept-alive connection.

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
            "mcp-protocol-version": LATEST_MODERN_VERSION,
            **{k.lower(): v for k, v in (headers or {}).items()},
        }
        #: Kept-alive connections not in use, with when each was last used.
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self._open: set[asyncio.StreamWriter] = set()
        self._slots = asyncio.Semaphore(MAX_CONNECTIONS)

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
        headers = {**self._headers, MCP_METHOD_HEADER: method, "content-length": str(len(body))}
        name_key = NAME_BEARING_METHODS.get(method)
        if name_key is not None and params and name_key in params:
            headers[MCP_NAME_HEADER] = encode_header_value(str(params[name_key]))
        head = f"POST {self._path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        async with self._slots:
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
            raise MCPError(-32600, f"HTTP {status} from {self.url}: {payload[:300]!r}")
        return self._result(_http_message(reply_headers, payload, request_id))

    async def close(self) -> None:
        self._idle.clear()
        for writer in list(self._open):
            await self._drop(writer)


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
