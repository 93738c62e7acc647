"""The transports ``serve`` serves over, as objects: stdio, http, ray.

Each is a small frozen value holding its own settings group (as httpx's ``Timeout`` and
``Limits`` are), checks that the flags given go with it, and serves. What the launcher
and ``serve --help`` need to know about each one (its panel, its own flags, whether the
stdio prelude applies) is its entry in the light table, :data:`openenv_mcp.transports.
TRANSPORTS`, read before anything heavy loads; this module imports the server stack only
inside :meth:`serve`.

``openenv-mcp serve`` parses the command line (typer), builds one of these with
:func:`transport_for`, and calls its :meth:`serve`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from openenv_mcp.errors import ArgumentError, OpenEnvError
from openenv_mcp.transports import SERVED, TRANSPORTS, ServedName, Transport, host_argv

if TYPE_CHECKING:
    from pydantic import BaseModel

    from openenv_mcp.environment import Environment
    from openenv_mcp.server._settings import ServerSettings

__all__ = [
    "HttpBind",
    "HttpTransport",
    "RayTransport",
    "ServeFailed",
    "Served",
    "StdioTransport",
    "choose_transport",
    "transport_for",
]

log = logging.getLogger("openenv_mcp")


class ServeFailed(OpenEnvError):
    """Serving could not start after the options were accepted (a cluster that did not
    come up): the command exits with :attr:`exit_status` 1, not a usage error's 2."""

    exit_status = 1


@dataclass(frozen=True)
class Served:
    """What every transport serves: one environment with its options and the server
    settings, all validated."""

    env: str
    env_cls: type[Environment[Any]]
    options: dict[str, Any]
    config: BaseModel
    settings: ServerSettings

    def build(self) -> Any:
        """The FastMCP server (the server stack loads here)."""
        from openenv_mcp.server import build_server

        return build_server(self.env_cls, settings=self.settings, **self.options)


@dataclass(frozen=True)
class HttpBind:
    """Where an HTTP server listens and whom it lets in (over ``--transport http`` and
    ``ray`` alike)."""

    host: str = "127.0.0.1"
    port: int = 8765
    allowed_hosts: tuple[str, ...] = ()
    auth_token: str | None = None

    def check(self) -> None:
        """Refuse an unsafe bind (off loopback without a token) before starting.

        Raises:
            ArgumentError: naming the bind and what it needs.
        """
        from openenv_mcp.server.transports._http import http_run_options

        http_run_options(self.host, self.auth_token, allowed_hosts=list(self.allowed_hosts))


@dataclass(frozen=True)
class StdioTransport:
    """``--transport stdio`` (the default): one client, the process that started this.

    Attributes:
        web_port: also serve the web page on this loopback port (0: any free one).
        episode_host: a thin front relaying to this user's episode host.
        host_socket: serve as that episode host, on this socket (the host's own start).
    """

    entry: ClassVar[Transport] = TRANSPORTS["stdio"]
    log_level: ClassVar[str] = "WARNING"  # a harness may show any stderr line as an error

    web_port: int | None = None
    episode_host: bool = False
    host_socket: Path | None = None

    def serve(self, served: Served, front_args: list[str]) -> bool:
        """Serve until the client leaves; whether anything was served.

        Args:
            served: the environment, options and settings.
            front_args: the command line after ``serve`` as the episode host takes it
                (a front relays with it).
        """
        if self.episode_host:
            from openenv_mcp.server.transports._host import relay

            raise SystemExit(relay(front_args))
        if self.host_socket is None and not _stdio_has_a_client(served.env):
            return False
        server = served.build()
        if self.host_socket is not None:
            import anyio

            from openenv_mcp.server.transports._host import serve_host

            with contextlib.suppress(KeyboardInterrupt):
                anyio.run(serve_host, server, self.host_socket)
            return True
        log.info("serving %s over stdio", served.env)
        _run(server, "stdio", web_port=self.web_port)
        return True


@dataclass(frozen=True)
class HttpTransport:
    """``--transport http``: Streamable HTTP at ``/mcp``, many clients.

    Attributes:
        bind: where it listens and whom it lets in.
        web: also serve the web page at ``/web/``.
        openenv: also speak OpenEnv's protocol under ``/openenv``.
    """

    entry: ClassVar[Transport] = TRANSPORTS["http"]
    log_level: ClassVar[str] = "INFO"

    bind: HttpBind = HttpBind()
    web: bool = False
    openenv: bool = False

    def serve(self, served: Served, front_args: list[str]) -> bool:
        """Serve until the process is stopped."""
        server = served.build()
        self.bind.check()
        b = self.bind
        log.info("serving %s over http on http://%s:%d/mcp", served.env, b.host, b.port)
        _run(
            server,
            "http",
            host=b.host,
            port=b.port,
            auth_token=b.auth_token,
            allowed_hosts=list(b.allowed_hosts),
            web=self.web,
            openenv=self.openenv,
        )
        return True


@dataclass(frozen=True)
class RayTransport:
    """``--transport ray``: replicas of the HTTP server on Ray Serve behind one URL (the
    ``[ray]`` extra), each episode pinned to the replica holding it.

    Attributes:
        bind: where the Serve proxy listens and whom it lets in.
        replicas: how many server replicas.
        address: a Ray cluster to join (``ray://head:10001``, ``auto``) instead of a
            local one.
        replica_cpus: logical CPUs each replica reserves.
    """

    entry: ClassVar[Transport] = TRANSPORTS["ray"]
    log_level: ClassVar[str] = "INFO"

    bind: HttpBind = HttpBind()
    replicas: int = 2
    address: str | None = None
    replica_cpus: float = 1.0

    def serve(self, served: Served, front_args: list[str]) -> bool:
        """Deploy, print the one URL clients use on stdout, and serve until SIGINT or
        SIGTERM. The replicas build the servers; here the options are only checked."""
        self.bind.check()
        try:
            from openenv_mcp.cluster import deploy
        except ImportError as exc:
            raise ArgumentError(
                f"--transport ray needs the ray extra: pip install 'openenv-mcp[ray]' ({exc})"
            ) from None
        b = self.bind
        try:
            deployment = deploy(
                served.env,
                replicas=self.replicas,
                options=served.config.model_dump(mode="json", exclude_unset=True),
                settings=served.settings.model_dump(mode="json", exclude_unset=True),
                address=self.address,
                host=b.host,
                port=b.port,
                auth_token=b.auth_token,
                allowed_hosts=list(b.allowed_hosts),
                replica_cpus=self.replica_cpus,
            )
        except ArgumentError:
            raise
        except OpenEnvError as exc:
            raise ServeFailed(str(exc)) from None
        # After ray.init, whose crash handler would otherwise abort the process on SIGTERM.
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        log.info(
            "serving %s from %d replicas on Ray Serve at %s",
            served.env,
            self.replicas,
            deployment.url,
        )
        sys.stdout.write(deployment.url + "\n")  # the one URL clients use: stdout's only line
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what Ray prints later is a log
        try:
            stop.wait()
        finally:
            deployment.shutdown()
        return True


#: The transport objects by the name ``serve --transport`` takes.
SERVING: dict[ServedName, type[StdioTransport | HttpTransport | RayTransport]] = {
    "stdio": StdioTransport,
    "http": HttpTransport,
    "ray": RayTransport,
}
assert tuple(SERVING) == SERVED


def choose_transport(transport: ServedName | None, aliases: Collection[ServedName]) -> ServedName:
    """The one transport ``--transport`` and its older spellings (``--stdio``, ``--http``,
    ``--ray``) name together; stdio when none is given.

    Raises:
        ArgumentError: two different ones, each named as given.
    """
    given = [f"--transport {transport}"] if transport is not None else []
    given += [TRANSPORTS[name].alias_flag for name in aliases]
    names = {*aliases, *([transport] if transport is not None else [])}
    if len(names) > 1:
        raise ArgumentError(
            f"choose one transport: {' and '.join(given)} were given; expected one of "
            f"--transport {'|'.join(SERVED)}"
        )
    return names.pop() if names else SERVED[0]


def transport_for(
    name: ServedName, given: Mapping[str, Any], *, values: Mapping[str, Any]
) -> StdioTransport | HttpTransport | RayTransport:
    """The transport object ``name`` with its settings group from the flags.

    Args:
        name: the chosen transport.
        given: the transport flags given on the command line (``"--web-port": 3``); a flag
            that only another transport takes (its entry's ``flags``) is refused.
        values: every transport flag's value, given or default, by its parameter name.

    Raises:
        ArgumentError: a flag of another transport: which, what it needs, what came.
    """
    for flag in given:
        owner = next((t for t in SERVED if flag in TRANSPORTS[t].flags), name)
        if owner != name:
            why = TRANSPORTS[owner].flags[flag]
            raise ArgumentError(f"{flag} needs --transport {owner} ({why}), got --transport {name}")
    bind = HttpBind(
        host=values["host"],
        port=values["port"],
        allowed_hosts=tuple(values["allowed_host"] or ()),
        auth_token=values["auth_token"],
    )
    if name == "http":
        return HttpTransport(bind, web=values["web"], openenv=values["openenv"])
    if name == "ray":
        return RayTransport(
            bind,
            replicas=values["replicas"],
            address=values["ray_address"],
            replica_cpus=values["replica_cpus"],
        )
    return StdioTransport(
        web_port=values["web_port"],
        episode_host=values["episode_host"],
        host_socket=values["episode_host_socket"],
    )


def _run(server: Any, transport: str, **how: Any) -> None:
    """Run ``server`` over ``transport`` until it ends (Ctrl-C ends it quietly)."""
    import anyio

    from openenv_mcp.server import serve

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(lambda: serve(server, transport, **how))  # type: ignore[arg-type]


def _stdio_has_a_client(env: str) -> bool:
    """Whether a stdio server has anyone to serve: not when stdin ended before any message
    (nothing to do: exit at once). On a terminal, say what it waits for."""
    from openenv_mcp.server.transports._prelude import current as current_prelude

    prelude = current_prelude()
    if prelude is not None and prelude.silent_eof:
        log.info("serving %s over stdio: stdin closed before any message, nothing to serve", env)
        return False
    if os.isatty(prelude.in_fd if prelude is not None else 0):
        sys.stderr.write(_terminal_hint(env) + "\n")
    return True


def _terminal_hint(env: str) -> str:
    """One line for a person who started a stdio server in a terminal by hand."""
    from openenv_mcp._util.interpreter import python_command

    if sys.argv[0].endswith("__main__.py"):
        program = python_command("-m", "openenv_mcp")
    else:
        program = [sys.argv[0]]
    command = [*program, *sys.argv[1:]]
    # the same command over HTTP: the stdio-only flags (and the transport named) dropped
    web = [*program, "serve", *host_argv(sys.argv[1:]), "--transport", "http", "--web"]
    return (
        f"openenv-mcp: serving {env} over stdio, waiting for an MCP client's JSON-RPC "
        "messages on stdin (an agent harness starts this command itself; Ctrl-D ends it). "
        f"To try it by hand: npx @modelcontextprotocol/inspector@2 -- {shlex.join(command)}, "
        f"or {shlex.join(web)} and open http://127.0.0.1:8765/web/"
    )
