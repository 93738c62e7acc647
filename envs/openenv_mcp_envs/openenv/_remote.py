"""A running OpenEnv server, spoken to over its own protocol.

:func:`describe_remote` reads what the server declares (``GET /schema``,
``GET /metadata``, and for an MCP environment its tools through ``POST /mcp``);
:class:`RemoteSession` is one OpenEnv session: one WebSocket on ``/ws``, opened at
the first reset and closed with the episode (OpenEnv gives each socket its own
environment instance). Every failure names the URL and what came back.

A server is not trusted with this process's memory or time: at start-up every
read shares one deadline and each answer is capped in bytes; in a session each
answer is capped in bytes (refused from its frame's length, never read) and in
JSON values (counted before it is parsed), and its pictures in pixels (from
their headers, before they are decoded). Each limit's error names the server and
the limit; an answer nobody asked for closes the session, since every later
answer would be taken for the wrong request.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import http.client
import json
import logging
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from openenv_mcp.errors import (
    ArgumentError,
    EnvCallTimeout,
    EnvCrashed,
    InvalidAction,
    ServerFull,
)
from openenv_mcp_envs.openenv._described import (
    Described,
    Limits,
    Observed,
    ToolCall,
    is_tool_call_schema,
)
from openenv_mcp_envs.openenv._images import TooLarge

__all__ = [
    "MAX_DESCRIPTION_BYTES",
    "MAX_DESCRIPTION_VALUES",
    "RemoteSession",
    "describe_remote",
    "normalize_url",
    "parse_reply",
    "reset_schema",
]

log = logging.getLogger("openenv_mcp.openenv")

#: Largest answer read at start-up (``/schema``, ``/metadata``, ``/mcp``'s tools), in
#: bytes: what a server declares is a few KB.
MAX_DESCRIPTION_BYTES = 8 * 1024 * 1024
#: Most JSON values in one of those answers (its schemas are copied several times).
MAX_DESCRIPTION_VALUES = 1024 * 1024
#: A received WebSocket frame waiting to be read: at most this many beyond the one
#: being read (an idle session's server cannot pile up answers in memory).
_MAX_QUEUE = 1
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")
#: Answers from this size on are parsed one at a time (see _large_answer).
_LARGE_FROM = 1024 * 1024
#: How the start-up limits are named in their errors (they are not settings).
_DECLARED = "for what a server declares at start-up: /schema, /metadata, its tools"


def _values(raw: bytes) -> int:
    """How many JSON values ``raw`` holds, counted as what they cost parsed: each value
    but the first follows a ``[``, ``{``, ``,`` or ``:``, and a string (a key too) counts
    its two quotes besides (a string takes 50 bytes or more, a number 32). Those inside
    strings count too: an upper bound. Parsed, a value so counted takes at most ~50 bytes."""
    return 1 + sum(raw.count(c) for c in (b",", b":", b"[", b"{", b'"'))


def parse_reply(
    raw: bytes,
    max_values: int,
    flag: str = "--max-reply-values",
    what: str = "an answer",
    count: int | None = None,
) -> Any:
    """``raw`` parsed as JSON, once it is known to hold at most ``max_values`` values
    (``count``, where it was counted already).

    Raises:
        TooLarge: more values (the count takes a few ms; parsing them could take
            seconds of Python's lock and gigabytes).
        orjson.JSONDecodeError: not JSON.
    """
    if len(raw) > max_values:  # fewer bytes than that cannot hold more values
        count = _values(raw) if count is None else count
        if count > max_values:
            raise TooLarge(
                f"{what} of {len(raw):,} bytes holding up to {count:,} JSON values",
                f"{max_values:,} values",
                flag,
            )
    return orjson.loads(raw)


#: One large answer is parsed at a time, in the whole process (see _large_answer).
_LARGE = threading.Lock()


@contextlib.contextmanager
def _large_answer(size: int) -> Iterator[None]:
    """From :data:`_LARGE_FROM` bytes on, an answer is parsed (and its pixel lists made
    arrays, and freed) alone in this process, with the garbage collector paused.

    Alone: a server answering every session at once with answers near the limits
    costs the memory of one of them at a time, not of all together. Paused: parsing
    makes millions of lists, none of them garbage, and the collector walks them all
    again and again as they come: a 1280x720 screenshot as nested lists took 1.4 s
    instead of 0.1 s, all of it holding Python's lock, so every other episode waited.
    Only the collector pauses (memory is freed as ever), and only here.
    """
    if size < _LARGE_FROM:
        yield
        return
    with _LARGE:
        enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if enabled:
                gc.enable()


def normalize_url(url: str) -> str:
    """``url`` as an ``http(s)://host[:port][/path]`` base, without a trailing slash.

    Raises:
        ArgumentError: naming what was expected and what came.
    """
    target = url.strip()
    if "://" not in target:
        target = f"http://{target}"
    parts = urllib.parse.urlsplit(target)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.hostname:
        raise ArgumentError(
            f"--url takes an OpenEnv server's base URL (http://host:port or https://...), "
            f"got {url!r}"
        )
    path = parts.path.rstrip("/")
    return urllib.parse.urlunsplit((scheme, parts.netloc, path, "", ""))


def _split_auth(base: str) -> tuple[str, dict[str, str]]:
    """The URL without ``user:password@`` and the Basic header it stood for."""
    parts = urllib.parse.urlsplit(base)
    if parts.username is None:
        return base, {}
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    plain = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
    return plain, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


class _Deadline:
    """One deadline for every read at start-up. When it passes, the sockets still open are
    shut, so a read blocked on a server that drips its answer (or sends nothing) returns
    at once, wherever it is (connecting, the headers, the body)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return self.end - time.monotonic()

    def hold(self, sock: socket.socket) -> None:
        """Shut ``sock`` when the deadline passes (now, if it has)."""
        with self._lock:
            self._sockets.append(sock)
            if not self.expired:
                return
        _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def close(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Watched:
    """A connection whose socket the start-up deadline holds once it is connected."""

    sock: Any

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self._deadline.hold(self.sock)


class _WatchedHTTP(_Watched, http.client.HTTPConnection):
    pass


class _WatchedHTTPS(_Watched, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection: Any = _WatchedHTTP
        return self.do_open(connection, req, deadline=self._deadline)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection: Any = _WatchedHTTPS
        return self.do_open(connection, req, deadline=self._deadline)


class _Startup:
    """The reads that describe a server at start-up: one deadline for them all
    (``--startup-timeout``), each answer capped (:data:`MAX_DESCRIPTION_BYTES`)."""

    def __init__(self, base: str, timeout: float, limits: Limits) -> None:
        self.base = base
        self.timeout = timeout
        self.limits = limits
        self.plain, self.headers = _split_auth(base)
        self.deadline = _Deadline(limits.startup_timeout)
        handlers: list[Any] = [_HTTPHandler(self.deadline), _HTTPSHandler(self.deadline)]
        # A proxy set for the outside world must not swallow loopback servers.
        if urllib.parse.urlsplit(self.plain).hostname in _LOOPBACK:
            handlers.append(urllib.request.ProxyHandler({}))
        self.opener = urllib.request.build_opener(*handlers)

    def __enter__(self) -> _Startup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.deadline.close()

    def left(self, path: str) -> float:
        """Seconds left for the next read (at most ``--timeout``).

        Raises:
            ArgumentError: none are.
        """
        left = self.deadline.left()
        if left <= 0 or self.deadline.expired:
            raise self._late(path, None)
        return min(self.timeout, left)

    def _late(self, path: str, received: int | None) -> ArgumentError:
        answer = "answer"
        if received:
            answer = f"finish its answer to {path} (it sent {received:,} bytes of it)"
        return ArgumentError(
            f"the OpenEnv server at {self.plain} did not {answer} within the start-up "
            f"deadline: {self.deadline.seconds:g}s for everything read at start-up, "
            "/schema, /metadata and its tools (--startup-timeout)"
        )

    def json(self, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any, str]:
        """``(status, parsed JSON or None, the start of the text)`` of one request.

        Raises:
            ArgumentError: the server could not be reached, or its answer came too late
                or too large.
        """
        data = None if body is None else json.dumps(body).encode()
        headers = self.headers
        if data is not None:
            headers = {**headers, "Content-Type": "application/json"}
        request = urllib.request.Request(self.plain + path, data=data, headers=headers)
        received = [0]
        try:
            try:
                response: Any = self.opener.open(request, timeout=self.left(path))
            except urllib.error.HTTPError as exc:
                response = exc
            with response:
                status = int(response.status if response.status is not None else response.code)
                raw = self._read(response, path, received)
        except TooLarge as exc:
            raise ArgumentError(f"the OpenEnv server at {self.plain} sent {exc}") from None
        except (OSError, ValueError, http.client.HTTPException) as exc:
            if self.deadline.expired:
                raise self._late(path, received[0]) from None
            reason = getattr(exc, "reason", exc)
            raise ArgumentError(
                f"no OpenEnv server answered at {self.plain}: {type(exc).__name__}: {reason} "
                "(is it running, and is this its base URL?)"
            ) from None
        if self.deadline.expired:  # what came is cut short
            raise self._late(path, received[0])
        text = raw[:300].decode("utf-8", errors="replace")
        try:
            parsed = parse_reply(raw, MAX_DESCRIPTION_VALUES, _DECLARED, f"its answer to {path}")
            return status, parsed, text
        except TooLarge as exc:
            raise ArgumentError(f"the OpenEnv server at {self.plain} sent {exc}") from None
        except orjson.JSONDecodeError:
            return status, None, text

    @staticmethod
    def _read(response: Any, path: str, received: list[int]) -> bytes:
        """The body, refused past :data:`MAX_DESCRIPTION_BYTES` (from its Content-Length
        where it gives one, else as it comes)."""
        limit = MAX_DESCRIPTION_BYTES
        length = response.headers.get("Content-Length", "") if response.headers else ""
        if length.strip().isdigit() and int(length) > limit:
            what = f"its answer to {path} of {int(length):,} bytes"
            raise TooLarge(what, f"{limit:,} bytes", _DECLARED)
        body = bytearray()
        read = getattr(response, "read1", response.read)  # what has come, not 64 KiB of it
        while chunk := read(64 * 1024):
            body += chunk
            received[0] = len(body)
            if len(body) > limit:
                what = f"its answer to {path} past {limit:,} bytes"
                raise TooLarge(what, f"{limit:,} bytes", _DECLARED)
        return bytes(body)


def describe_remote(url: str, timeout: float, limits: Limits | None = None) -> Described:
    """What the OpenEnv server at ``url`` serves: its schemas, name, and MCP tools.

    Everything is read within ``limits.startup_timeout`` seconds, together.

    Raises:
        ArgumentError: unreachable, not an OpenEnv server (naming what came), or its
            answers too slow or too large (naming the limit).
    """
    base = normalize_url(url)
    limits = limits or Limits()
    with _Startup(base, timeout, limits) as startup:
        return _describe(startup)


def _describe(startup: _Startup) -> Described:
    base = startup.base
    status, schema, text = startup.json("/schema")
    if not (
        status == 200
        and isinstance(schema, dict)
        and isinstance(schema.get("action"), dict)
        and isinstance(schema.get("observation"), dict)
    ):
        what = f"HTTP {status}" + (
            f" with JSON keys {sorted(schema)[:20]}" if isinstance(schema, dict) else f": {text!r}"
        )
        raise ArgumentError(
            f"{base} is not an OpenEnv server: GET {base}/schema answered {what}; an OpenEnv "
            "server (openenv-core's create_app) answers 200 with {action, observation, state} "
            "JSON schemas"
        )
    name, description = "", ""
    with contextlib.suppress(ArgumentError):
        status, meta, _ = startup.json("/metadata")
        if status == 200 and isinstance(meta, dict):
            name = str(meta.get("name") or "")
            description = str(meta.get("description") or "")
    tools = None
    if is_tool_call_schema(schema["action"]):
        tools = _remote_tools(startup)
    reset = reset_schema(schema.get("reset"))
    return Described(
        origin=base,
        name=name or urllib.parse.urlsplit(base).netloc,
        description=description,
        action_schema=schema["action"],
        observation_schema=schema["observation"],
        state_schema=schema.get("state") or {},
        tools=tools,
        reset_schema=reset,
        takes_seed=_takes_seed(reset),
    )


def reset_schema(declared: Any) -> dict[str, Any] | None:
    """A server's reset schema (``/schema``'s ``reset``: a JSON schema of an object whose
    properties are its reset's keyword arguments), or ``None`` where it publishes none
    (OpenEnv's own servers: their ``/schema`` has ``action``, ``observation``, ``state``)."""
    if not isinstance(declared, dict) or not isinstance(declared.get("properties"), dict):
        return None
    properties = declared["properties"].items()
    if not all(isinstance(k, str) and isinstance(v, dict) for k, v in properties):
        return None
    return declared


def _takes_seed(schema: dict[str, Any] | None) -> bool | None:
    """Whether a published reset schema takes ``seed`` (``None``: none published, or it
    takes any keyword argument, where a seed may be used or dropped)."""
    if schema is None:
        return None
    if "seed" in schema["properties"]:
        return True
    return False if schema.get("additionalProperties") is False else None


def _remote_tools(startup: _Startup) -> list[ToolCall]:
    """An OpenEnv MCP environment's tools, from its ``POST /mcp`` (a stateless instance
    answers: no session is taken), else from a ``list_tools`` step on a session."""
    base = startup.base
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    status, answer, _ = startup.json("/mcp", request)
    listed = None
    if status == 200 and isinstance(answer, dict):
        listed = (answer.get("result") or {}).get("tools")
    if not isinstance(listed, list):
        session = RemoteSession(base, startup.left("/ws"), startup.limits)
        try:
            listed = session.exchange(
                {"type": "step", "data": {"type": "list_tools"}}, "list_tools"
            )
            listed = (listed.get("observation") or {}).get("tools")
        finally:
            session.close()
    if not isinstance(listed, list):
        raise ArgumentError(
            f"{base} declares MCP actions (CallToolAction) but listed no tools: POST /mcp "
            f"tools/list answered HTTP {status}"
        )
    return [
        ToolCall(
            str(t.get("name")),
            str(t.get("description") or ""),
            dict(t.get("inputSchema") or t.get("input_schema") or {"type": "object"}),
        )
        for t in listed
        if isinstance(t, dict) and t.get("name")
    ]


class RemoteSession:
    """One OpenEnv session: a WebSocket on ``BASE/ws`` carrying reset, step and state.

    Opened lazily (at the first message), so a server's prototype never holds one:
    an OpenEnv server allows ``max_concurrent_envs`` sockets at once (one, as
    ``openenv init`` scaffolds it).

    OpenEnv's messages carry no request ids: each request has one answer, in order.
    An answer of the wrong kind, or a message waiting before a request is sent (one
    nobody asked for), would shift every later answer onto the wrong request, so the
    session is closed instead, with an error saying so.
    """

    def __init__(self, base: str, timeout: float, limits: Limits | None = None) -> None:
        self.base = base
        self.timeout = timeout
        self.limits = limits or Limits()
        plain, self._headers = _split_auth(base)
        scheme = "wss" if plain.startswith("https://") else "ws"
        self.ws_url = f"{scheme}://{plain.split('://', 1)[1]}/ws"
        self._ws: Any = None

    def _connect(self) -> Any:
        from websockets.exceptions import InvalidHandshake, InvalidURI
        from websockets.sync.client import connect

        loopback = urllib.parse.urlsplit(self.ws_url).hostname in _LOOPBACK
        try:
            return connect(
                self.ws_url,
                open_timeout=self.timeout,
                close_timeout=min(self.timeout, 5.0),
                # Refused from the frame's length, before its bytes are read.
                max_size=self.limits.reply_bytes,
                max_queue=_MAX_QUEUE,
                additional_headers=self._headers or None,
                # On loopback, deflating 400 KB frames costs more than sending them.
                compression=None if loopback else "deflate",
                proxy=None if loopback else True,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise EnvCrashed(
                f"could not open an OpenEnv session at {self.ws_url}: {type(exc).__name__}: "
                f"{exc} (is the server running, and is --url its base URL?)"
            ) from None

    def exchange(self, message: dict[str, Any], what: str) -> dict[str, Any]:
        """Send one message and return its answer's ``data``.

        Raises:
            ServerFull: the server's sessions are all taken.
            InvalidAction: the server refused the action (its validation, or the
                environment raised on it).
            EnvCrashed: the socket closed or never opened (naming the URL); the answer
                was past a limit, of the wrong kind, or came unasked (the session is
                closed).
            EnvCallTimeout: no answer within the timeout.
        """
        data: dict[str, Any] = self._receive(message, what, None)
        return data

    def _round_trip(self, message: dict[str, Any], what: str) -> bytes:
        """Send one message; its answer's bytes."""
        from websockets.exceptions import ConnectionClosed

        fresh = self._ws is None
        if fresh:
            self._ws = self._connect()
        try:
            if not fresh:  # a fresh socket may hold the server's refusal (CAPACITY_REACHED)
                self._refuse_unasked(what)
            return self._send_and_receive(orjson.dumps(message).decode())
        except TimeoutError:
            self._drop()  # a late answer would be read as the next one's
            raise EnvCallTimeout(
                f"the OpenEnv server at {self.ws_url} did not answer {what} within "
                f"{self.timeout:g}s (--timeout); its session is closed"
            ) from None
        except ConnectionClosed as exc:
            self._ws = None
            raise self._closed(exc, what) from None

    def _observe(self, message: dict[str, Any], what: str) -> Observed:
        """Send a reset or a step; its answer as an :class:`Observed`."""
        observed: Observed = self._receive(message, what, self._observed)
        return observed

    def _observed(self, data: dict[str, Any]) -> Observed:
        return Observed.from_payload(data, max_pixels=self.limits.frame_pixels)

    def _receive(
        self,
        message: dict[str, Any],
        what: str,
        convert: Callable[[dict[str, Any]], Observed] | None,
    ) -> Any:
        """Send ``message``; its answer's ``data`` (``convert``-ed), within the limits."""
        raw = self._round_trip(message, what)
        limits = self.limits
        expected = "state" if message.get("type") == "state" else "observation"
        # fewer bytes than the limit cannot hold more values: no need to count them
        count = _values(raw) if len(raw) > limits.observation_values else None
        converted: Observed | None = None
        refused, garbled = "", False
        with _large_answer(len(raw)):
            # what is refused goes before another large answer may come in
            try:
                answer = parse_reply(raw, limits.reply_values, count=count)
                if (
                    convert is not None
                    and isinstance(answer, dict)
                    and answer.get("type") in (None, expected)
                    and isinstance(answer.get("data"), dict)
                ):
                    converted = convert(answer.pop("data"))
                    # the parsed lists went with it, while the collector was paused
                arrays = 0 if converted is None else converted.array_values
                passed = 0 if count is None else count - arrays
                if passed > limits.observation_values:
                    raise TooLarge(
                        f"an answer of up to {passed:,} JSON values besides its pixel lists",
                        f"{limits.observation_values:,} values",
                        "--max-observation-values",
                    )
            except TooLarge as exc:
                refused, answer, converted = str(exc), None, None
            except orjson.JSONDecodeError:
                garbled, answer = True, None
        if refused:
            self._drop()
            raise EnvCrashed(
                f"the OpenEnv server at {self.base} sent {refused}; its session is closed"
            )
        if garbled:
            self._drop()
            raise EnvCrashed(
                f"{self.ws_url} answered {what} with something that is not JSON: {raw[:80]!r}"
            )
        if not isinstance(answer, dict):
            self._drop()
            raise EnvCrashed(f"{self.ws_url} answered {what} with {type(answer).__name__}")
        kind = answer.get("type")
        if kind == "error":
            raise self._error(answer.get("data") or {}, what)
        if kind is not None and kind != expected:
            self._drop()
            raise EnvCrashed(
                f"the OpenEnv server at {self.base} answered the {what} with a {kind!r} "
                f"message, not {expected!r}: its answers no longer match the requests, so "
                "its session is closed (reset starts a new one)"
            )
        if converted is not None:
            return converted
        data = answer.get("data")
        return data if isinstance(data, dict) else {}

    def _refuse_unasked(self, what: str) -> None:
        """Close the session if a message is waiting before a request is sent."""
        from websockets.exceptions import ConnectionClosed

        try:
            unasked = self._ws.recv(timeout=0, decode=False)
        except (TimeoutError, ConnectionClosed):
            return  # nothing waits (or the socket closed: sending finds out)
        self._drop()
        raise EnvCrashed(
            f"the OpenEnv server at {self.base} sent a message nobody asked for "
            f"({bytes(unasked[:80])!r}): every later answer would be taken for the wrong "
            f"request, so its session is closed before the {what} (reset starts a new one)"
        )

    def _closed(self, exc: Any, what: str) -> EnvCrashed:
        from websockets.frames import CloseCode

        if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
            limit = self.limits.reply_bytes
            # websockets says "frame with N bytes exceeds limit of M bytes"
            size = re.search(r"with (\d+) bytes", exc.sent.reason or "")
            what = f"an answer of more than {limit:,} bytes"
            if size is not None:
                what = f"an answer of {int(size.group(1)):,} bytes"
            refused = TooLarge(what, f"{limit:,} bytes", "--max-reply-bytes")
            return EnvCrashed(
                f"the OpenEnv server at {self.base} sent {refused}; it was refused unread, "
                "and its session is closed"
            )
        code = exc.rcvd.code if exc.rcvd is not None else 1006
        reason = exc.rcvd.reason if exc.rcvd is not None else "no close frame"
        return EnvCrashed(
            f"the OpenEnv session at {self.ws_url} closed during {what} "
            f"(code {code}: {reason or 'no reason'}); its episode is gone"
        )

    def _send_and_receive(self, text: str) -> bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            self._ws.send(text)
        except ConnectionClosed as closed:
            # A server that refuses a session (CAPACITY_REACHED) says why, then closes,
            # maybe before this message went out: read what it said, if it did.
            try:
                return bytes(self._ws.recv(timeout=0, decode=False))
            except (TimeoutError, ConnectionClosed):
                raise closed from None  # nothing was said: the close is the answer
        return bytes(self._ws.recv(timeout=self.timeout, decode=False))

    def _error(self, data: dict[str, Any], what: str) -> Exception:
        code = str(data.get("code", "UNKNOWN"))
        message = str(data.get("message", "no message"))
        if code == "CAPACITY_REACHED":
            self._drop()
            return ServerFull(
                f"the OpenEnv server at {self.base} has all its sessions taken "
                f"({data.get('active_sessions')}/{data.get('max_sessions')}, its "
                "max_concurrent_envs): close another episode, or start it with more"
            )
        if code in ("VALIDATION_ERROR", "EXECUTION_ERROR") and what != "state":
            detail = _errors_text(data.get("errors"))
            verb = "refused" if code == "VALIDATION_ERROR" else "raised on"
            return InvalidAction(
                f"the OpenEnv server at {self.base} {verb} the {what}: {message}{detail}"
            )
        self._drop()
        return EnvCrashed(f"the OpenEnv server at {self.base} failed {what}: {code}: {message}")

    def reset(self, kwargs: dict[str, Any]) -> Observed:
        """Start an episode with ``kwargs`` (its reset's keyword arguments)."""
        return self._observe({"type": "reset", "data": kwargs}, "reset")

    def step(self, action: dict[str, Any]) -> Observed:
        """Send one action (the Action model's fields)."""
        return self._observe({"type": "step", "data": action}, "action")

    def state(self) -> dict[str, Any]:
        """The server's State of this session (``episode_id``, ``step_count``, ...)."""
        if self._ws is None:
            return {}
        return self.exchange({"type": "state"}, "state")

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close()

    def close(self) -> None:
        """Say goodbye (OpenEnv's ``close`` message) and close the socket."""
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(Exception):
            ws.send('{"type": "close"}')
        self._drop()


def _errors_text(errors: Any) -> str:
    """Pydantic's error list as ``" (field: message; ...)"``."""
    if not isinstance(errors, list) or not errors:
        return ""
    parts = []
    for error in errors[:5]:
        if isinstance(error, dict):
            where = ".".join(str(p) for p in error.get("loc", ()))
            parts.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
    return f" ({'; '.join(parts)})" if parts else ""
