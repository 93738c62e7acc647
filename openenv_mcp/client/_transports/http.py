"""MCP over Streamable HTTP: one POST per request on kept-alive connections, with a
minimal HTTP/1.1 client (a general one costs about 0.8 ms a request here)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
from typing import Any

import orjson

from openenv_mcp.client._transports.base import MAX_MESSAGE, RpcError, Sessionless
from openenv_mcp.wire.sdk import (
    LATEST_VERSION,
    METHOD_HEADER,
    NAME_BEARING_METHODS,
    NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
    encode_header_value,
    param_headers,
)

__all__ = ["MAX_CONNECTIONS", "HttpTransport"]

#: Seconds after which a kept-alive HTTP connection is replaced before use.
_IDLE_RECONNECT = 2.0
#: Most HTTP connections one client keeps to a server (one request in flight on each).
MAX_CONNECTIONS = 32


class HttpTransport(Sessionless):
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
