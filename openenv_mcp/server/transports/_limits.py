"""Connection limits for the HTTP server: no stranger can stop it without the token.

uvicorn runs the server; its settings hold what they can, and this module adds
the least that closes the gaps they leave (read against uvicorn 0.55's
``protocols/http/httptools_impl.py``):

* ``timeout_keep_alive`` (uvicorn's): an idle connection between requests is
  closed after ``http_keep_alive`` seconds. Used as is; and kept, since any byte
  cancels uvicorn's timer (even the rest of a body answered early, 401), by a
  deadline here that only the start of a new request ends.
* **Read timeout** (uvicorn has none): a request's line, headers and body must
  arrive within ``http_read_timeout`` seconds (from connecting, or from the first
  byte of a later request); else 408 and the connection is closed. uvicorn arms
  its keep-alive timer only after a response, so a connection that never finished
  its request stayed open forever.
* **Header size** (httptools honours no limit: ``h11_max_incomplete_event_size``
  is h11's alone, and llhttp buffers a header line of any length): a request line
  and headers over ``http_max_header_bytes`` are answered 431. h11 would honour
  its setting, but it parses in Python (0.1-0.4 ms more per request, on a 0.5 ms
  sessionless call); httptools stays (a declared dependency, for that speed), and
  what it is fed while a request's headers are incomplete is counted.
* **Connection cap** (``limit_concurrency`` acts only once a request's headers
  have arrived, answering 503, so it cannot bound connections that never send
  any, and it counts the connection it would answer): past
  ``http_max_connections`` open connections, the one waiting longest is closed to
  make room: still sending its request, then idle between requests, then an event
  stream (a ``GET`` answered ``text/event-stream``: an MCP session's
  server-to-client stream, the web page's live feed) silent longest, ended
  cleanly so its client reconnects. A request being answered is never closed.
  When the cap is all requests being answered, :data:`RESERVE` more connections
  are let in, for ``/healthz`` (always answered) and to answer anything else 503.
  One log line per ten seconds says so.
* **Descriptor exhaustion**: the cap defaults to half the process's descriptor
  limit, so accepting never runs out. If a burst of connections reaches the limit
  anyway, asyncio logs a traceback for every accept it retries (thousands a
  second); :func:`accept_errors_throttled` makes that one line per ten seconds.
  Connections wait in the listen queue (uvicorn's ``backlog``, 2048) meanwhile,
  and are served as the cap frees descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from openenv_mcp.server.transports._http import HEALTH_PATH
from openenv_mcp.server.transports._logs import Throttle

if TYPE_CHECKING:
    from openenv_mcp.server._settings import ServerSettings

__all__ = [
    "HttpLimits",
    "LimitedHttpProtocol",
    "accept_errors_throttled",
    "default_max_connections",
    "http_limits",
    "uvicorn_options",
]

log = logging.getLogger("openenv_mcp.server.http")

#: The most connections the default cap allows, however high the descriptor limit.
MAX_DEFAULT_CONNECTIONS = 1024
#: Seconds a connection answered 431 mid-headers is still read (and what comes
#: dropped) before it is closed, so a client still sending can read the answer:
#: closing a socket with unread bytes resets it, and the reset discards the answer.
LINGER = 2.0
_ACCEPT_ERROR = "socket.accept() out of system resource"
#: Connections let in past a cap held entirely by requests being answered: enough for
#: health probes (a liveness, a readiness, a person) to be answered, and for other
#: requests to learn why they are not (503).
RESERVE = 4
#: Which connections go first when room must be made: answered ones, then those
#: still sending a request, then those idle between requests, then event streams
#: (the one waiting longest first in each: an event stream waits since it last sent).
_EVICTION_ORDER = {"closing": 0, "reading": 1, "idle": 2, "stream": 3}
_HEALTH = HEALTH_PATH.encode()


def descriptor_limit() -> int:
    """This process's soft limit on open file descriptors (RLIMIT_NOFILE)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_DEFAULT_CONNECTIONS * 64 if soft == resource.RLIM_INFINITY else soft


def default_max_connections() -> int:
    """Half the descriptor limit (the rest for environments, recordings, workers and
    bursts of accepts), at most :data:`MAX_DEFAULT_CONNECTIONS`."""
    return max(8, min(MAX_DEFAULT_CONNECTIONS, descriptor_limit() // 2))


@dataclass(frozen=True)
class HttpLimits:
    """What one HTTP server holds its connections to (see the module's docstring)."""

    max_connections: int
    read_timeout: float = 30.0
    max_header_bytes: int = 32 * 1024
    keep_alive: float = 5.0


def backlog(max_connections: int) -> int:
    """uvicorn's ``backlog``: asyncio accepts up to that many connections per pass of
    its loop, before the cap (in ``connection_made``) sees any, and a second pass can
    come first: so a quarter of the descriptors the cap leaves free, at most uvicorn's
    2048. It is the listen queue's length too, where connections wait at the cap."""
    return max(16, min(2048, (descriptor_limit() - max_connections) // 4))


def http_limits(settings: ServerSettings) -> HttpLimits:
    """The limits ``settings`` ask for (``http_*``), defaults filled in."""
    return HttpLimits(
        max_connections=settings.http_max_connections or default_max_connections(),
        read_timeout=settings.http_read_timeout,
        max_header_bytes=settings.http_max_header_bytes,
        keep_alive=settings.http_keep_alive,
    )


def _raw_response(status: int, message: str) -> bytes:
    """A whole response that closes the connection, as uvicorn writes its own 400."""
    body = message.encode()
    return b"".join(
        [
            STATUS_LINE[status],
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
    )


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a read timeout, a header size limit and a
    connection cap. Subclassed per server by :func:`uvicorn_options` (``limits``)."""

    limits: ClassVar[HttpLimits]
    notes: ClassVar[Throttle]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: "reading" (a request not yet received in full), "busy" (a request being
        #: answered), "stream" (an event stream, waiting for its next event), "idle"
        #: (between requests) or "closing" (answered early, dropping what still comes).
        #: A busy connection has no deadline and is never closed to make room.
        self._phase = "reading"
        self._since = 0.0
        self._deadline: asyncio.TimerHandle | None = None
        self._in_headers = True
        self._header_bytes = 0
        #: The request being answered asks for /healthz (it holds no place in the cap).
        self._probe = False

    def _wait(self, phase: str, seconds: float | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase, self._since = phase, self.loop.time()
        if seconds is not None:
            self._deadline = self.loop.call_later(seconds, self._expired)

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._phase == "reading":
            self.notes.log(
                logging.INFO,
                "read-timeout",
                "closed a connection from %s that sent no whole request within %gs "
                "(http_read_timeout)",
                self._peer(),
                self.limits.read_timeout,
            )
            cycle = self.cycle
            if cycle is None or cycle.response_complete or not cycle.response_started:
                message = f"request not received in full within {self.limits.read_timeout:g}s"
                self.transport.write(_raw_response(408, message))
        self.transport.close()

    def _peer(self) -> str:
        return self.client[0] if self.client else "?"

    # -- the connection ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait("reading", self.limits.read_timeout)
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def _make_room(self) -> None:
        """Past the cap: close the connection waiting longest, let this one in to the
        reserve (every other one has a request being answered), or refuse it."""
        live = [c for c in self.connections if not c.transport.is_closing()]
        cap = self.limits.max_connections
        if len(live) <= cap:
            return  # the excess is already closing
        waiting = [c for c in live if c is not self and _waiting(c)]
        held = sum(1 for c in live if c is not self and _holding(c))
        if (held >= cap or not waiting) and len(live) <= cap + RESERVE:
            return  # the reserve: its requests answered 503 while the cap is held (_refuse)
        if waiting:
            victim = min(waiting, key=lambda c: (_EVICTION_ORDER[c._phase], c._since))
            self.notes.log(
                logging.WARNING,
                "cap",
                "%d HTTP connections open (http_max_connections=%d): closing the one waiting "
                "longest (from %s) to serve a new one",
                len(live),
                cap,
                victim._peer(),
            )
            victim._close()
            return
        self._log_full(held)
        self._wait("busy", None)
        self.transport.write(_raw_response(503, self._busy()))
        self.transport.close()

    def _close(self) -> None:
        """Close this waiting connection to make room; an event stream is ended first (the
        end of its chunked body), so its client takes it for a stream ended, and
        reconnects, not for a failure."""
        cycle = self.cycle
        if self._phase == "stream" and cycle.chunked_encoding and not cycle.response_complete:
            self.transport.write(b"0\r\n\r\n")
            cycle.disconnected = True  # the app's next event is dropped, not written after it
        self._wait("busy", None)
        self.transport.close()

    def _refuse(self) -> bool:
        """Whether this request is refused: the cap is held by others' requests being
        answered (this connection is in the reserve) and it does not ask for /healthz."""
        cap = self.limits.max_connections
        if len(self.connections) <= cap or self._probe:
            return False
        held = sum(
            1
            for c in self.connections
            if c is not self and not c.transport.is_closing() and _holding(c)
        )
        if held < cap:
            return False
        self._log_full(held)
        return True

    def _busy(self) -> str:
        cap = self.limits.max_connections
        return (
            f"server busy: {cap} connections, each with a request being answered "
            "(http_max_connections); retry shortly"
        )

    def _log_full(self, held: int) -> None:
        self.notes.log(
            logging.WARNING,
            "full",
            "%d HTTP connections each have a request being answered "
            "(http_max_connections=%d): answering new requests 503 (/healthz is answered)",
            held,
            self.limits.max_connections,
        )

    # -- requests ----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._phase == "closing":
            return  # answered already; what still comes is dropped unparsed
        was_in_headers = self._in_headers
        super().data_received(data)
        if not (was_in_headers and self._in_headers) or self.transport.is_closing():
            return
        # Still no end of headers: all of this was header bytes (httptools would
        # buffer a header line of any length).
        self._header_bytes += len(data)
        if self._header_bytes > self.limits.max_header_bytes:
            self._log_too_large(f"over {self.limits.max_header_bytes}")
            self._wait("closing", LINGER)
            self.transport.write(_raw_response(431, self._too_large()))
            if self.transport.can_write_eof():
                self.transport.write_eof()
            else:
                self.transport.close()

    def _too_large(self) -> str:
        return (
            f"request line and headers over {self.limits.max_header_bytes} bytes "
            "(http_max_header_bytes)"
        )

    def _log_too_large(self, size: str) -> None:
        self.notes.log(
            logging.INFO,
            "header-size",
            "answered 431 to %s: request line and headers of %s bytes (http_max_header_bytes=%d)",
            self._peer(),
            size,
            self.limits.max_header_bytes,
        )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_headers = True
        self._header_bytes = 0
        if self._phase == "idle":
            self._wait("reading", self.limits.read_timeout)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._probe = self.url.partition(b"?")[0] == _HEALTH
        size = len(self.url) + sum(len(k) + len(v) + 4 for k, v in self.headers)
        if size > self.limits.max_header_bytes:
            self._log_too_large(str(size))
            self._serve(_answer(431, self._too_large()))
        elif self._refuse():
            self._serve(_answer(503, self._busy()))
        elif self.parser.get_method() == b"GET":
            self._serve(_watched(self.app, self))
        else:
            super().on_headers_complete()

    def _serve(self, app: Any) -> None:
        """This request to ``app``, not the server's: uvicorn's own way to answer without
        the app (as its limit_concurrency 503)."""
        app, self.app = self.app, app
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        super().on_message_complete()
        if self._phase == "reading":
            self._wait("busy", None)

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if not pipelined and not self.transport.is_closing():
            self._wait("idle", self.limits.keep_alive)

    def handle_websocket_upgrade(self) -> None:
        self._wait("busy", None)
        if self._refuse():
            self.transport.write(_raw_response(503, self._busy()))
            self.transport.close()
            return
        super().handle_websocket_upgrade()


def _waiting(connection: object) -> TypeGuard[LimitedHttpProtocol]:
    """Whether ``connection`` may be closed to make room: not a request being answered
    (nor a WebSocket: uvicorn's own protocol once upgraded)."""
    return isinstance(connection, LimitedHttpProtocol) and connection._phase != "busy"


def _holding(connection: object) -> bool:
    """Whether ``connection`` holds a place in the cap: a request being answered, but
    for /healthz's (a WebSocket holds one)."""
    if not isinstance(connection, LimitedHttpProtocol):
        return True
    return connection._phase == "busy" and not connection._probe


def _watched(app: Any, connection: LimitedHttpProtocol) -> Any:
    """``app`` for a GET on ``connection``: an answer ``text/event-stream`` makes it a
    stream, waiting (for :meth:`~LimitedHttpProtocol._make_room`) since its last event."""

    async def watched(scope: Any, receive: Any, send: Any) -> None:
        async def timed(message: Any) -> None:
            if message["type"] == "http.response.start":
                if _is_event_stream(message.get("headers", ())):
                    connection._wait("stream", None)
            elif connection._phase == "stream":
                connection._since = connection.loop.time()
            await send(message)

        await app(scope, receive, timed)

    return watched


def _is_event_stream(headers: Any) -> bool:
    return any(
        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in headers
    )


def _answer(status: int, message: str) -> Any:
    """An ASGI app that answers ``status`` and closes the connection."""
    body = message.encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return app


def uvicorn_options(limits: HttpLimits) -> dict[str, Any]:
    """uvicorn ``Config`` keywords that enforce ``limits`` (and log to stderr)."""
    protocol = type(
        "LimitedHttpProtocol",
        (LimitedHttpProtocol,),
        {"limits": limits, "notes": Throttle(log)},
    )
    if limits.max_connections > descriptor_limit() - 32:
        log.warning(
            "http_max_connections=%d is close to this process's descriptor limit "
            "(RLIMIT_NOFILE %d): at the limit no connection can be accepted; lower it or "
            "raise the limit (ulimit -n)",
            limits.max_connections,
            descriptor_limit(),
        )
    return {
        "http": protocol,
        "backlog": backlog(limits.max_connections),
        "timeout_keep_alive": limits.keep_alive,
        # uvicorn's own log config writes to stdout; route its records through the
        # process's logging (stderr) instead.
        "log_config": None,
        # OpenEnv's socket (--openenv) goes uncompressed: deflating a 400 KB frame of JSON
        # numbers costs tens of ms a step, more than all else (zstd frames are the small form).
        "ws_per_message_deflate": False,
    }


@contextlib.contextmanager
def accept_errors_throttled() -> Iterator[None]:
    """While serving: one line per ten seconds, not a traceback per retried accept, when
    the process runs out of descriptors (asyncio logs each of up to ``backlog``
    retries per pass of its loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        yield
        return
    previous = loop.get_exception_handler()
    notes = Throttle(log)

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == _ACCEPT_ERROR:
            notes.log(
                logging.WARNING,
                "accept",
                "cannot accept connections: out of file descriptors (%s; RLIMIT_NOFILE %d). "
                "New connections wait in the listen queue until descriptors free up; "
                "lower http_max_connections or raise the limit (ulimit -n)",
                context.get("exception"),
                descriptor_limit(),
            )
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    try:
        yield
    finally:
        loop.set_exception_handler(previous)
