"""One MCP connection to an environment server, and the one place a target
becomes a transport.

A target is a FastMCP server object (in memory), a command (a string, split
like a shell would, or a list: a stdio subprocess this connection owns), or an
``http(s)://`` URL (Streamable HTTP). :func:`transport_for` decides; nothing
else looks at the target's type.

Every failure of the link itself (the server exited, the connection closed, no
answer within the timeout) becomes :class:`~openenv_mcp.errors.ServerDied`,
and the connection stays dead: later calls fail at once instead of waiting.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO, Unpack

import anyio
import httpx2
import mcp_types
from fastmcp import Client, FastMCP
from fastmcp.client.transports import (
    ClientTransport,
    FastMCPTransport,
    StdioTransport,
    StreamableHttpTransport,
)
from fastmcp.client.transports.base import SessionKwargs, TransportOptions
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from openenv_mcp.client._lean import LeanHttp, LeanStdio, LeanTransport
from openenv_mcp.client._spaces import ServerSpec
from openenv_mcp.errors import (
    ArgumentError,
    OpenEnvError,
    ServerDied,
    did_you_mean,
    error_from_wire,
)

__all__ = ["Connection", "Target", "transport_for"]

log = logging.getLogger("openenv_mcp.client")

#: What a client can connect to: a server object, a command, a URL, or a ready transport.
Target = FastMCP[Any] | str | Sequence[str] | ClientTransport
#: Where a stdio server's stderr goes: a file's path, or an open file.
ServerLog = str | os.PathLike[str] | TextIO

_SPEC_SUFFIX = "/spec"
_TAIL_BYTES = 2000
# Teardown of a dead link must not hang either.
_CLOSE_TIMEOUT = 10.0
# Failures of the link itself, as the transports raise them.
_LINK_ERRORS = (
    EOFError,  # asyncio.IncompleteReadError: a reply cut off mid-way
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    httpx2.TransportError,
    ConnectionError,
    OSError,
)


def describe_target(target: Target) -> str:
    """A short human description of a target, for error messages."""
    if isinstance(target, FastMCP):
        return f"in-memory server {target.name!r}"
    if isinstance(target, str):
        return target
    if isinstance(target, ClientTransport):
        return repr(target)
    return shlex.join(target)


def _command(target: str | Sequence[str]) -> list[str]:
    argv = shlex.split(target) if isinstance(target, str) else [str(a) for a in target]
    if not argv:
        raise ArgumentError("expected a command to run the server, got an empty one")
    # A trainer's venv may not be on PATH (a notebook kernel, `venv/bin/python x.py`);
    # the openenv-mcp installed beside this client is then the one meant.
    if argv[0] == "openenv-mcp" and shutil.which("openenv-mcp") is None:
        argv = [sys.executable, "-m", "openenv_mcp.cli", *argv[1:]]
    return argv


def transport_for(
    target: Target,
    *,
    server_log: Path | TextIO | None = None,
    headers: dict[str, str] | None = None,
    lean: bool = True,
) -> ClientTransport | LeanTransport:
    """Pick the transport for ``target``: the one place this is decided.

    Args:
        target: a FastMCP server (in memory); an ``http://`` or ``https://`` URL
            (Streamable HTTP); a command as a string (split like a shell would)
            or a list of arguments (a stdio subprocess, stopped and reaped when
            the connection closes); or a fastmcp ``ClientTransport``, used as is.
        server_log: where a stdio server's stderr goes.
        headers: extra HTTP headers (``Authorization: Bearer ...``).
        lean: use the lean stdio/HTTP transports (:mod:`._lean`) rather than
            the MCP SDK's; both speak standard MCP.

    Raises:
        ArgumentError: for anything else, or an empty command.
    """
    if isinstance(target, ClientTransport):
        return target
    if isinstance(target, FastMCP):
        return FastMCPTransport(target)
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        if lean:
            return LeanHttp(target, headers)
        return StreamableHttpTransport(target, headers=headers)
    if isinstance(target, str) or (
        isinstance(target, Sequence) and all(isinstance(a, str) for a in target)
    ):
        argv = _command(target)
        if lean:
            return LeanStdio(argv, dict(os.environ), server_log)
        return StdioTransport(
            command=argv[0],
            args=argv[1:],
            # Like subprocess: the server inherits this process's environment
            # (the MCP SDK would otherwise pass only a short safe list).
            env=dict(os.environ),
            keep_alive=False,
            log_file=server_log,
        )
    raise ArgumentError(
        "expected a FastMCP server, a command (string or list of strings) or an "
        f"http(s):// URL, got {type(target).__name__} {target!r}"
    )


class _UncheckedSession(ClientSession):
    """A session that trusts tool results instead of re-validating their schema.

    The MCP SDK checks every structured result against the tool's output schema
    with jsonschema (about 0.05 ms a call here); the client parses each field it
    reads itself, so the check buys a trainer nothing per step. fastmcp's own
    proxies skip it the same way.
    """

    async def validate_tool_result(self, name: str, result: mcp_types.CallToolResult) -> None:
        return None


class _Unchecked(ClientTransport):
    """Wrap a transport so its sessions are :class:`_UncheckedSession`."""

    def __init__(self, inner: ClientTransport) -> None:
        self.inner = inner
        self.legacy_only = inner.legacy_only

    @contextlib.asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncGenerator[ClientSession, None]:
        options = replace(transport_options or TransportOptions(), session_class=_UncheckedSession)
        async with self.inner.connect_session(
            transport_options=options, **session_kwargs
        ) as session:
            yield session

    async def close(self) -> None:
        await self.inner.close()  # type: ignore[no-untyped-call]

    def get_session_id(self) -> str | None:
        return self.inner.get_session_id()

    def __repr__(self) -> str:
        return repr(self.inner)


def tool_error(result: mcp_types.CallToolResult) -> OpenEnvError:
    """The typed error of a tool error result (``"Name: message"``)."""
    text = " ".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))
    return error_from_wire(text or "tool error without a message")


class Connection:
    """One MCP connection, shared by every episode opened on it.

    Args:
        target: see :func:`transport_for`.
        timeout: seconds any one call may take before the server counts as dead.
        connect_timeout: seconds to start (a subprocess) and connect.
        check_results: re-validate every result against its output schema
            (the MCP SDK's default; off because it costs time on every step).
        server_log: where a stdio server's stderr goes (a path, appended to, or
            an open file); by default a temporary file whose tail is quoted when
            the server dies.
    """

    def __init__(
        self,
        target: Target,
        *,
        timeout: float,
        connect_timeout: float,
        check_results: bool = False,
        server_log: ServerLog | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if isinstance(server_log, (str, os.PathLike)):
            server_log = Path(server_log)
        if timeout <= 0 or connect_timeout <= 0:
            raise ArgumentError(
                "timeouts must be positive, got "
                f"timeout={timeout} connect_timeout={connect_timeout}"
            )
        self.target = target
        self.description = describe_target(target)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._log_capture: TextIO | None = None
        if server_log is None and not isinstance(target, (FastMCP, ClientTransport)):
            is_url = isinstance(target, str) and target.startswith(("http://", "https://"))
            if not is_url:
                # Lives as long as the connection (closed in aclose), so no `with`.
                self._log_capture = tempfile.TemporaryFile(  # noqa: SIM115
                    "w+", prefix="openenv-mcp-server-"
                )
                server_log = self._log_capture
        self._server_log = server_log
        # The lean transports carry every step of a training loop; the SDK client
        # serves in-memory servers, ready-made transports and check_results.
        transport = transport_for(
            target, server_log=server_log, headers=headers, lean=not check_results
        )
        self._client: Client[Any] | LeanTransport = (
            transport
            if isinstance(transport, LeanTransport)
            else Client(
                transport if check_results else _Unchecked(transport),
                init_timeout=connect_timeout,
            )
        )
        self.spec: ServerSpec | None = None
        self.tools: dict[str, mcp_types.Tool] = {}
        self._dead: ServerDied | None = None
        self._session: ClientSession | LeanTransport | None = None
        self._opened = False
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` succeeded and :meth:`aclose` has not run."""
        return self._opened and not self._closed

    async def open(self) -> None:
        """Connect, then read the server's spec and tool list.

        Raises:
            ServerDied: the server did not start or answer within ``connect_timeout``.
            ArgumentError: the server is not an openenv-mcp environment server.
        """
        if self._opened:
            return
        self._opened = True
        try:
            with anyio.fail_after(self.connect_timeout):
                if isinstance(self._client, LeanTransport):
                    await self._client.connect()
                else:
                    await self._client.__aenter__()  # type: ignore[no-untyped-call]
                spec_uri = await self._spec_uri()
                contents = await self._client.read_resource(spec_uri)
                text = next(
                    c.text for c in contents if isinstance(c, mcp_types.TextResourceContents)
                )
                self.spec = ServerSpec.from_json(json.loads(text))
                self.tools = {t.name: t for t in await self._client.list_tools()}
                self._session = (
                    self._client
                    if isinstance(self._client, LeanTransport)
                    else self._client.session
                )
        except TimeoutError:
            error: OpenEnvError = ServerDied(
                f"{self.description} did not start and answer within {self.connect_timeout:g}s"
                + self._log_tail()
            )
        except OpenEnvError as exc:
            error = exc
        except Exception as exc:
            error = ServerDied(f"could not connect to {self.description}: {exc}" + self._log_tail())
            error.__cause__ = exc
        else:
            return
        await self.aclose()
        raise error

    async def _spec_uri(self) -> str:
        uris = [str(r.uri) for r in await self._client.list_resources()]
        for uri in uris:
            if uri.startswith("openenv://") and uri.endswith(_SPEC_SUFFIX):
                return uri
        raise ArgumentError(
            f"{self.description} is an MCP server but not an openenv-mcp environment server: "
            f"it has no openenv://ENV/spec resource (resources: {uris or 'none'})"
        )

    async def aclose(self) -> None:
        """Disconnect; a stdio subprocess is stopped and reaped. Idempotent, bounded."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            try:
                await self._client.close()  # type: ignore[no-untyped-call]
            except Exception as exc:  # the link may already be gone; nothing left to save
                log.debug("closing %s: %r", self.description, exc)
        if self._log_capture is not None:
            self._log_capture.close()

    # -- calls ---------------------------------------------------------------------------

    def require_tool(self, name: str) -> mcp_types.Tool:
        """The listed tool ``name``.

        Raises:
            ArgumentError: naming the tools there are.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise ArgumentError(
                f"the server has no tool {name!r}.{did_you_mean(name, self.tools)} "
                f"Tools: {', '.join(sorted(self.tools))}"
            )
        return tool

    async def call(self, tool: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call a tool; return its result, or raise its typed error.

        Raises:
            OpenEnvError: the server's error, as its class (``InvalidAction``, ...).
            ServerDied: the link failed, or no answer came within ``timeout``.
        """
        if self._dead is not None:
            raise ServerDied(str(self._dead))
        if not self.is_open or self._session is None:
            raise ServerDied(f"the connection to {self.description} is closed")
        try:
            # The MCP session's own call, not fastmcp's call_tool: this path runs
            # every step, and fastmcp's wrapper (a task per call to watch the
            # session, a tracing span) costs about 0.1 ms that a trainer feels.
            # A lost link still fails at once: the session fails its pending
            # requests ("Connection closed"); anything else ends at the timeout.
            with anyio.fail_after(self.timeout):
                result = await self._session.call_tool(tool, args)
        except TimeoutError:
            raise self._die(
                f"{self.description} did not answer {tool} within {self.timeout:g}s "
                "(hung or overloaded)"
            ) from None
        except MCPError as exc:
            if exc.code in (mcp_types.CONNECTION_CLOSED, mcp_types.REQUEST_TIMEOUT):
                raise self._die(f"lost {self.description} during {tool}: {exc.message}") from exc
            raise OpenEnvError(f"{tool}: {exc.message}") from exc
        except _LINK_ERRORS as exc:
            raise self._die(f"lost {self.description} during {tool}: {exc!r}") from exc
        except RuntimeError as exc:  # the SDK's own checks (check_results) on an answer
            raise OpenEnvError(f"{tool}: {exc}") from exc
        if result.is_error:
            raise tool_error(result)
        return result

    def _die(self, message: str) -> ServerDied:
        self._dead = ServerDied(message + self._log_tail())
        return self._dead

    def _log_tail(self) -> str:
        """The end of the server's stderr, where this connection kept it."""
        log_file = self._log_capture
        path = self._server_log if isinstance(self._server_log, Path) else None
        try:
            if log_file is not None and not log_file.closed:
                fd = log_file.fileno()
                size = os.fstat(fd).st_size
                data = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES))
                text = data.decode("utf-8", "replace")
            elif path is not None:
                text = path.read_text("utf-8", "replace")[-_TAIL_BYTES:]
            else:
                return ""
        except OSError:
            return ""
        text = text.strip()
        return f"\nserver stderr (last lines):\n{text}" if text else ""
