"""A running OpenEnv server, spoken to over its own protocol.

:func:`describe_remote` reads what the server declares (``GET /schema``,
``GET /metadata``, and for an MCP environment its tools through ``POST /mcp``);
:class:`RemoteSession` is one OpenEnv session: one WebSocket on ``/ws``, opened at
the first reset and closed with the episode (OpenEnv gives each socket its own
environment instance). Every failure names the URL and what came back.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import orjson

from openenv_env._described import Described, Observed, ToolCall, is_tool_call_schema
from openenv_mcp.errors import (
    ArgumentError,
    EnvCallTimeout,
    EnvCrashed,
    InvalidAction,
    ServerFull,
)

__all__ = ["RemoteSession", "describe_remote", "normalize_url"]

log = logging.getLogger("openenv_mcp.openenv")

#: Largest message accepted from an OpenEnv server (its own client allows 100 MB).
MAX_MESSAGE = 100 * 1024 * 1024
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


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


def _http_json(
    base: str, path: str, timeout: float, body: dict[str, Any] | None = None
) -> tuple[int, Any, str]:
    """``(status, parsed JSON or None, the start of the text)`` of one request to ``base+path``.

    Raises:
        ArgumentError: the server could not be reached at all.
    """
    plain, headers = _split_auth(base)
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        headers = {**headers, "Content-Type": "application/json"}
    request = urllib.request.Request(plain + path, data=data, headers=headers)
    try:
        with _opener(plain).open(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ArgumentError(
            f"no OpenEnv server answered at {plain}: {type(exc).__name__}: {reason} "
            "(is it running, and is this its base URL?)"
        ) from None
    text = raw[:300].decode("utf-8", errors="replace")
    try:
        return status, json.loads(raw), text
    except ValueError:
        return status, None, text


def _opener(url: str) -> urllib.request.OpenerDirector:
    # A proxy set for the outside world must not swallow loopback servers.
    if urllib.parse.urlsplit(url).hostname in _LOOPBACK:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def describe_remote(url: str, timeout: float) -> Described:
    """What the OpenEnv server at ``url`` serves: its schemas, name, and MCP tools.

    Raises:
        ArgumentError: unreachable, or not an OpenEnv server (naming what came).
    """
    base = normalize_url(url)
    status, schema, text = _http_json(base, "/schema", timeout)
    if not (
        status == 200
        and isinstance(schema, dict)
        and isinstance(schema.get("action"), dict)
        and isinstance(schema.get("observation"), dict)
    ):
        what = f"HTTP {status}" + (
            f" with JSON keys {sorted(schema)}" if isinstance(schema, dict) else f": {text!r}"
        )
        raise ArgumentError(
            f"{base} is not an OpenEnv server: GET {base}/schema answered {what}; an OpenEnv "
            "server (openenv-core's create_app) answers 200 with {action, observation, state} "
            "JSON schemas"
        )
    name, description = "", ""
    with contextlib.suppress(ArgumentError):
        status, meta, _ = _http_json(base, "/metadata", timeout)
        if status == 200 and isinstance(meta, dict):
            name = str(meta.get("name") or "")
            description = str(meta.get("description") or "")
    tools = None
    if is_tool_call_schema(schema["action"]):
        tools = _remote_tools(base, timeout)
    return Described(
        origin=base,
        name=name or urllib.parse.urlsplit(base).netloc,
        description=description,
        action_schema=schema["action"],
        observation_schema=schema["observation"],
        state_schema=schema.get("state") or {},
        tools=tools,
    )


def _remote_tools(base: str, timeout: float) -> list[ToolCall]:
    """An OpenEnv MCP environment's tools, from its ``POST /mcp`` (a stateless instance
    answers: no session is taken), else from a ``list_tools`` step on a session."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    status, answer, _ = _http_json(base, "/mcp", timeout, request)
    listed = None
    if status == 200 and isinstance(answer, dict):
        listed = (answer.get("result") or {}).get("tools")
    if not isinstance(listed, list):
        session = RemoteSession(base, timeout)
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
    """

    def __init__(self, base: str, timeout: float) -> None:
        self.base = base
        self.timeout = timeout
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
                max_size=MAX_MESSAGE,
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
            EnvCrashed: the socket closed or never opened (naming the URL).
            EnvCallTimeout: no answer within the timeout.
        """
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            self._ws = self._connect()
        try:
            raw = self._send_and_receive(orjson.dumps(message).decode())
        except TimeoutError:
            self._drop()  # a late answer would be read as the next one's
            raise EnvCallTimeout(
                f"the OpenEnv server at {self.ws_url} did not answer {what} within "
                f"{self.timeout:g}s (--timeout); its session is closed"
            ) from None
        except ConnectionClosed as exc:
            self._ws = None
            code = exc.rcvd.code if exc.rcvd is not None else 1006
            reason = exc.rcvd.reason if exc.rcvd is not None else "no close frame"
            raise EnvCrashed(
                f"the OpenEnv session at {self.ws_url} closed during {what} "
                f"(code {code}: {reason or 'no reason'}); its episode is gone"
            ) from None
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self._drop()
            raise EnvCrashed(
                f"{self.ws_url} answered {what} with something that is not JSON: {raw[:80]!r}"
            ) from None
        if not isinstance(answer, dict):
            raise EnvCrashed(f"{self.ws_url} answered {what} with {type(answer).__name__}")
        if answer.get("type") == "error":
            raise self._error(answer.get("data") or {}, what)
        data = answer.get("data")
        return data if isinstance(data, dict) else {}

    def _send_and_receive(self, text: str) -> Any:
        from websockets.exceptions import ConnectionClosed

        try:
            self._ws.send(text)
        except ConnectionClosed as closed:
            # A server that refuses a session (CAPACITY_REACHED) says why, then closes,
            # maybe before this message went out: read what it said, if it did.
            try:
                return self._ws.recv(timeout=0)
            except (TimeoutError, ConnectionClosed):
                raise closed from None  # nothing was said: the close is the answer
        return self._ws.recv(timeout=self.timeout)

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
        data = self.exchange({"type": "reset", "data": kwargs}, "reset")
        return Observed.from_payload(data)

    def step(self, action: dict[str, Any]) -> Observed:
        """Send one action (the Action model's fields)."""
        return Observed.from_payload(self.exchange({"type": "step", "data": action}, "action"))

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
