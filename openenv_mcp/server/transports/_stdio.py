"""A lean stdio transport: newline-delimited JSON-RPC with a direct path for tool calls.

The stock stdio stack spends about 1.8 ms of server time on each request
(thread hops, pydantic models of every message, middleware), several times an
emulator step. This loop reads stdin on the event loop itself and answers
``tools/call`` for this server's own tools directly: parse, run the tool,
write one JSON line. Every other message (the handshake, ``tools/list``,
resources, pings, notifications, unknown tools) goes to FastMCP's own server
through memory streams, so the wire stays standard MCP in both protocol eras
(the 2025 ``initialize`` handshake and 2026-07-28's per-request envelope); the
independent-client tests (MCP Inspector, TypeScript SDK) check that.

:class:`LineConnection` is that loop without the process's pipes: the
client's in-memory transport serves a server object through it too, so
in-memory tests run the very path stdio does.

At stdin EOF, requests in flight (on either path) finish and their replies
are written before the server exits: nothing a client sent is dropped. A line
that is not JSON, or not a JSON-RPC request, is answered with the JSON-RPC
error for it (id null where it has no usable id); a line over
:data:`MAX_LINE` is answered once and skipped. Stdin that is not a pipe, socket
or terminal (a file, ``/dev/null``) is read on a thread.

Started by ``openenv-mcp serve --stdio``, the server takes over from the
process's :class:`~openenv_mcp.server.transports._prelude.Prelude`, which has been reading
stdin and answering the handshake since the process started.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import math
import os
import stat
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
import mcp_types as types
from fastmcp import FastMCP

from openenv_mcp.server._app import EnvApp
from openenv_mcp.server.episodes._episodes import Caller, current_caller
from openenv_mcp.server.tools._direct import dumps, is_request_id
from openenv_mcp.server.transports._prelude import Handover, Recorder, hold_wire, is_private
from openenv_mcp.server.transports._prelude import current as current_prelude
from openenv_mcp.wire.exactjson import loads_exact
from openenv_mcp.wire.sdk import parse_jsonrpc, run_standard_stack, session_message, use_transport

__all__ = ["MAX_LINE", "LineConnection", "serve_stdio", "stream_lines"]

log = logging.getLogger("openenv_mcp.server")

#: Longest request line accepted (bytes); longer ones get a JSON-RPC error.
MAX_LINE = 16 * 1024 * 1024
_PARSE_ERROR = -32700
_PIPE_SIZE = 1 << 20
_READ = 1 << 20
_INVALID_REQUEST = -32600
#: Seconds past the per-call timeout that EOF waits for replies still owed.
_DRAIN_GRACE = 5.0


class _Wire:
    """The two ends of the pipe, owned privately so stray prints cannot corrupt them.

    While serving, fd 1 points at stderr and fd 0 at the null device: a
    ``print`` in an environment lands in the log, not in the protocol.
    """

    def __init__(self, fds: tuple[int, int] | None = None) -> None:
        # A prelude's, already held privately, or this process's own.
        self._in, self._out = fds if fds is not None else hold_wire()
        self.reader = os.fdopen(self._in, "rb", buffering=0)
        self.writer: IO[bytes] = os.fdopen(self._out, "wb", buffering=0)
        # A batch of raw frames is megabytes; Linux pipes hold 64 KiB, so the
        # reply would cross in dozens of wake-ups. Ask for 1 MiB (best effort).
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(self._out, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)

    def restore(self) -> None:
        os.dup2(self._in, 0)
        os.dup2(self._out, 1)
        self.reader.close()
        self.writer.close()


async def _lines(
    reader: IO[bytes], lead: Handover | None = None
) -> AsyncIterator[bytes | ValueError]:
    """Lines from ``reader``, after ``lead``'s (what a prelude read first); a line over
    :data:`MAX_LINE` yields one ValueError, once."""
    lead = lead or Handover()
    for line in lead.lines:
        yield line
    if lead.eof:
        if lead.rest:
            yield lead.rest
        return
    if not _pollable(reader.fileno()):
        # A regular file, /dev/null (which epoll refuses, and asyncio would only log
        # that and wait forever), another device: read it on a thread.
        rest = lead.rest
        while line := rest + await anyio.to_thread.run_sync(reader.readline, MAX_LINE + 1):
            rest = b""
            if len(line) <= MAX_LINE:
                yield line
                continue
            while not line.endswith(b"\n"):  # skip the rest of the long line
                line = await anyio.to_thread.run_sync(reader.readline, MAX_LINE + 1)
                if not line:
                    break
            yield ValueError("line too long")
        return
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), reader)
    if lead.rest:
        stream.feed_data(lead.rest)
    async for item in stream_lines(stream):
        yield item


async def stream_lines(stream: asyncio.StreamReader) -> AsyncIterator[bytes | ValueError]:
    """Lines from ``stream`` (made with ``limit=MAX_LINE``); a longer line yields one
    ValueError, once, and is skipped."""
    while True:
        try:
            line = await stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # EOF (and a last line without newline)
            if exc.partial:
                yield exc.partial
            return
        except asyncio.LimitOverrunError:
            await _skip_line(stream)
            yield ValueError("line too long")
            continue
        yield line


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd``: a pipe, a socket or a terminal."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _skip_line(stream: asyncio.StreamReader) -> None:
    """Drop the rest of an over-long line, through its newline.

    asyncio's own ``readline`` would clear what it buffered and hand back the
    line's tail as if it were the next line.
    """
    while True:
        try:
            await stream.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await stream.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


class LineConnection:
    """One client's newline-delimited JSON-RPC connection: the direct path for our
    tool calls, FastMCP's standard stack for everything else.

    Args:
        server: the FastMCP server (made by ``build_server``).
        app: its :class:`EnvApp`.
        write: writes one line (bytes with the newline) to the client.
        transport: what the handlers are told the call came over (``"stdio"``,
            ``"memory"``): one client per connection, so a default episode.
        recorder: sees the standard stack's requests and answers (a prelude's).
    """

    def __init__(
        self,
        server: FastMCP,
        app: EnvApp,
        write: Callable[[bytes], object],
        transport: str,
        recorder: Recorder | None = None,
    ) -> None:
        self.server = server
        self.recorder = recorder
        self.direct = app.direct_calls(server, transport)
        self._write = write
        self.drain_timeout = app.settings.call_timeout + _DRAIN_GRACE
        #: Requests read and not answered yet, on either path.
        self.owed = 0
        #: Ids of the requests the standard stack has not answered yet.
        self.standard: Counter[Any] = Counter()
        self.idle = anyio.Event()
        self.idle.set()
        #: Direct calls running (a reference each, so none is collected mid-way).
        self._calls: set[asyncio.Task[None]] = set()
        #: Their cancel scopes (see :meth:`cancel_calls`).
        self._scopes: set[anyio.CancelScope] = set()

    def _begin(self) -> None:
        if self.owed == 0:
            self.idle = anyio.Event()
        self.owed += 1

    def _end(self) -> None:
        self.owed -= 1
        if self.owed == 0:
            self.idle.set()

    def _answered(self, request_id: Any) -> None:
        if self.standard[request_id] > 0:
            self.standard[request_id] -= 1
            self._end()

    def write(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else dumps(message) + b"\n"
        try:
            self._write(data)
        except (BrokenPipeError, ValueError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.warning("client went away; dropping a reply")

    async def call_tool(self, request_id: Any, params: dict[str, Any]) -> None:
        # anyio's scope, not Task.cancel: an env call on a worker thread is shielded and
        # runs to its end, so its episode is closed, not abandoned, at shutdown.
        scope = anyio.CancelScope()
        self._scopes.add(scope)
        try:
            with scope:
                self.write(await self.direct.run(request_id, params))
        finally:
            self._scopes.discard(scope)
            self._end()

    @contextlib.asynccontextmanager
    async def _stack(self, buffer: float) -> AsyncIterator[Any]:
        """The standard stack running for this connection, fed by the stream yielded
        (``buffer`` messages deep); on the way out the stream is closed, which ends the
        stack, and the direct calls still running are cancelled."""
        to_server, from_client = anyio.create_memory_object_stream[Any](buffer)
        to_client, from_server = anyio.create_memory_object_stream[Any](64)
        # One connection is one caller: its calls without a handle mean its own episode.
        caller = current_caller.set(Caller())
        try:
            async with from_client, from_server, anyio.create_task_group() as tg:
                tg.start_soon(run_standard_stack, self.server, from_client, to_client)
                tg.start_soon(self.pump_out, from_server)
                async with to_server:
                    yield to_server
        finally:
            self.cancel_calls()
            current_caller.reset(caller)

    async def serve(self, lines: AsyncIterator[bytes | ValueError]) -> None:
        """Serve the lines until they end, then answer what is in flight."""
        async with self._stack(64) as to_server:
            async for line in lines:
                forward = self.receive(line)
                if forward is not None:
                    await to_server.send(forward)
            await self.drain()

    def cancel_calls(self) -> None:
        """Cancel the direct calls still running (a signal stops the server mid-load:
        requests read and not yet run are dropped, as a task group would drop them)."""
        for scope in list(self._scopes):
            scope.cancel()

    async def pump_out(self, stream: Any) -> None:
        async for wrapped in stream:
            message = wrapped.message
            data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            response = isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
            if not (response and self.recorder and self.recorder.outbound(message.id, data)):
                self.write(data + b"\n")
            if response:
                self._answered(message.id)

    def receive(self, line: bytes | ValueError) -> Any | None:
        """Take one line: answer it (a direct call starts at once, as a task; bad input
        is answered here), or return the message the standard stack must get."""
        if isinstance(line, ValueError):
            too_long = f"request line longer than {MAX_LINE} bytes"
            self.write(self._error(None, _PARSE_ERROR, too_long))
            return None
        if not line.strip():
            return None
        try:
            message = loads_exact(line)
        except ValueError as exc:
            self.write(self._error(None, _PARSE_ERROR, f"not JSON: {exc}"))
            return None
        direct = self.direct.match(message)
        if direct is not None:
            self._begin()
            # A plain asyncio task: anyio's start_soon costs ~30 us a call, a third
            # of a quick step's server time. call_tool never raises (errors are
            # replies), and EOF waits for every call owed (self.idle).
            task = asyncio.get_running_loop().create_task(self.call_tool(*direct))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
            return None
        try:
            parsed = parse_jsonrpc(message)
        except Exception:
            self._invalid(message)
            return None
        if isinstance(parsed, types.JSONRPCNotification) and "id" in message:
            # A request whose id is neither string nor integer would pass as a
            # notification (extra fields are ignored) and never be answered.
            self._invalid(message)
            return None
        if isinstance(parsed, types.JSONRPCRequest):
            if self.recorder is not None:
                self.recorder.inbound(message)
            # A request the prelude already answered is replayed for the stack's
            # state only: the client is owed nothing for it, so EOF need not wait.
            if not is_private(parsed.id):
                self.standard[parsed.id] += 1
                self._begin()
        elif (
            isinstance(parsed, types.JSONRPCNotification)
            and parsed.method == "notifications/cancelled"
        ):
            # A cancelled request gets no answer: stop waiting for one.
            self._answered((parsed.params or {}).get("requestId"))
        return session_message(parsed)

    async def drain(self) -> None:
        """At EOF: finish the requests in flight and write their replies."""
        with anyio.move_on_after(self.drain_timeout) as scope:
            await self.idle.wait()
        if scope.cancelled_caught:
            log.warning("stdin closed; %d requests still unanswered, exiting anyway", self.owed)

    async def serve_pipe(self, fd: int, lead: Handover | None = None) -> None:
        """Serve what ``lead`` holds (a prelude read it first), then lines read from
        ``fd`` (a pipe, a socket or a terminal) by the event loop's readiness callback,
        each taken as soon as it is read: no stream and no reader task, a call's turn
        through the loop less than :meth:`serve`."""
        lead = lead or Handover()
        loop = asyncio.get_running_loop()
        # Unbounded: the reader hands messages over from a callback, in order.
        async with self._stack(math.inf) as to_server:
            reader = _PipeLines(fd, self, loop, to_server.send_nowait, lead.rest)
            try:
                for line in lead.lines:
                    reader.take(line)
                loop.add_reader(fd, reader.readable)
                await reader.ended.wait()
                await self.drain()
            finally:
                with contextlib.suppress(Exception):
                    loop.remove_reader(fd)

    def _invalid(self, message: Any) -> None:
        """Answer JSON that is not a JSON-RPC message (a response from the client is dropped)."""
        if (
            isinstance(message, dict)
            and "method" not in message
            and ("result" in message or "error" in message)
        ):
            log.warning("dropping a malformed response from the client")
            return
        request_id = message.get("id") if isinstance(message, dict) else None
        self.write(
            self._error(
                request_id if is_request_id(request_id) else None,
                _INVALID_REQUEST,
                'not a JSON-RPC 2.0 request: expected an object with "jsonrpc": "2.0", '
                'a string "method" and a string or integer "id"',
            )
        )

    @staticmethod
    def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class _PipeLines:
    """Splits what a pipe brings into lines, in a readiness callback, and hands each to
    its connection (a line over :data:`MAX_LINE` is answered once and skipped)."""

    def __init__(
        self,
        fd: int,
        connection: LineConnection,
        loop: asyncio.AbstractEventLoop,
        forward: Callable[[Any], None],
        rest: bytes = b"",
    ) -> None:
        self.fd = fd
        self.connection = connection
        self.loop = loop
        self.forward = forward
        self.ended = anyio.Event()
        self._buffer = bytearray(rest)
        self._scanned = 0
        self._skipping = False
        # Read into one buffer kept for it: os.read(fd, n) allocates n bytes every call.
        self._chunk = memoryview(bytearray(_READ))
        os.set_blocking(fd, False)

    def readable(self) -> None:
        try:
            size = os.readv(self.fd, [self._chunk])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            size = 0
        if not size:
            self.loop.remove_reader(self.fd)
            if self._buffer and not self._skipping:  # a last line without its newline
                self.take(bytes(self._buffer))
            self._buffer.clear()
            self.ended.set()
            return
        buffer = self._buffer
        buffer += self._chunk[:size]
        start = 0
        while (end := buffer.find(b"\n", max(start, self._scanned))) >= 0:
            if self._skipping:  # the tail of a line too long
                self._skipping = False
            elif end + 1 - start > MAX_LINE:  # too long, and ended in this chunk
                self.take(ValueError("line too long"))
            else:
                self.take(bytes(buffer[start : end + 1]))
            start = self._scanned = end + 1
        if start:
            del buffer[:start]
        self._scanned = len(buffer)
        if len(buffer) > MAX_LINE and not self._skipping:
            self.take(ValueError("line too long"))
            self._skipping = True
        if self._skipping:
            buffer.clear()
            self._scanned = 0

    def take(self, line: bytes | ValueError) -> None:
        """Hand one line to the connection."""
        forward = self.connection.receive(line)
        if forward is not None:
            self.forward(forward)


async def serve_stdio(server: FastMCP, app: EnvApp) -> None:
    """Serve ``server`` over this process's stdin/stdout until stdin closes.

    Where this process started a prelude (``openenv-mcp serve --stdio``), the
    server takes over its wire and everything it read.
    """
    prelude = current_prelude()
    if prelude is not None and prelude.handed:
        prelude = None  # a second server in the process: the prelude served the first
    wire = _Wire((prelude.in_fd, prelude.out_fd) if prelude else None)
    recorder = prelude.recorder(app.env_cls.__module__) if prelude else None
    conn = LineConnection(server, app, wire.writer.write, "stdio", recorder)
    if recorder is not None:
        recorder.send = conn.write
    lead = prelude.hand_over() if prelude else None
    try:
        async with use_transport("stdio"):
            if _pollable(wire.reader.fileno()) and not (lead is not None and lead.eof):
                await conn.serve_pipe(wire.reader.fileno(), lead)
            else:
                await conn.serve(_lines(wire.reader, lead))
    finally:
        with contextlib.suppress(OSError):
            wire.restore()
        sys.stdout.flush()
