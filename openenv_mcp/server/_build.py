"""``build_server`` and ``serve``: from an environment name to a running server."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, Literal, NoReturn

import anyio
from fastmcp import FastMCP

from openenv_mcp._util.version import __version__
from openenv_mcp.environment import Environment
from openenv_mcp.options import make_config
from openenv_mcp.registry import get_env_class
from openenv_mcp.server._app import EnvApp
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.faces._mcp_app import mount_mcp_app
from openenv_mcp.server.transports._http import http_run_options, mount_health
from openenv_mcp.server.transports._limits import (
    accept_errors_throttled,
    http_limits,
    uvicorn_options,
)
from openenv_mcp.server.transports._logs import redacting, throttling
from openenv_mcp.server.transports._malloc import tune_malloc
from openenv_mcp.server.transports._stdio import serve_stdio

__all__ = ["build_server", "get_app", "serve"]

log = logging.getLogger("openenv_mcp.server")

_APP_ATTR = "_openenv_app"


def build_server(
    env: str | type[Environment[Any]],
    /,
    *,
    settings: ServerSettings | None = None,
    **options: Any,
) -> FastMCP:
    """Build a FastMCP server that mounts one environment.

    Args:
        env: a registered name (``"atari"``), a ``"module:Class"`` reference, or an
            :class:`Environment` subclass.
        settings: episode limits and tool options (defaults: :class:`ServerSettings`).
        **options: the environment's construction options (its ``Config`` fields; ``env``
            is positional-only, so a field named ``env`` is an option too).

    Returns:
        The server; run it with :func:`serve`, or connect to it in memory with
        ``fastmcp.Client(server)`` or ``MCPEnvClient(server)``.
    """
    env_cls = get_env_class(env) if isinstance(env, str) else env
    config = make_config(env_cls.Config, options, env_cls.name)
    app = EnvApp(env_cls, config, settings or ServerSettings())
    server = FastMCP(
        name=f"openenv-{env_cls.name}",
        instructions=app.instructions(),
        version=__version__,
        mask_error_details=True,
    )
    app.mount(server)
    mount_mcp_app(server, app)  # the game view, for hosts of MCP Apps
    setattr(server, _APP_ATTR, app)
    return server


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            scope.cancel()
            return


def get_app(server: FastMCP) -> EnvApp:
    """The :class:`EnvApp` behind a server made by :func:`build_server`."""
    app = getattr(server, _APP_ATTR, None)
    if not isinstance(app, EnvApp):
        raise TypeError("this FastMCP server was not made by openenv_mcp.build_server")
    return app


async def serve(
    server: FastMCP,
    transport: Literal["stdio", "http"] = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    auth_token: str | None = None,
    web: bool = False,
    web_port: int | None = None,
    allowed_hosts: list[str] | None = None,
    openenv: bool = False,
) -> None:
    """Run ``server`` until the client leaves (stdio EOF) or the process is stopped.

    Over HTTP the server binds ``host`` (loopback by default), validates Host
    and Origin headers, and, with ``auth_token``, requires
    ``Authorization: Bearer <token>`` (mandatory off loopback).
    With ``web`` an HTTP server also serves its web page at ``/web/``; with
    ``web_port`` a stdio server serves the page (and ``/mcp``) on that loopback
    port, so a person can watch the agent playing over stdio (0: any free port;
    the address is logged on stderr). ``allowed_hosts`` are more names clients may
    reach the server by (its Host header): a Kubernetes Service's, a proxy's. With
    ``openenv`` an HTTP server also speaks OpenEnv's protocol under ``/openenv``
    (:mod:`openenv_mcp.server.faces._openenv`), over the same episodes.
    Every episode is closed on the way out, freeing its environment. If an
    environment call hung past its timeout is still running then, the process
    exits (status 0) without waiting for it: a thread cannot be stopped.

    Raises:
        ArgumentError: an HTTP bind off loopback without ``auth_token``.
    """
    app = get_app(server)
    tune_malloc()
    # Before anything listens: an environment may refuse to be reached by others.
    app.prototype.check_exposure(
        transport == "http" or auth_token is not None or web_port is not None
    )
    http_options = {}
    if transport == "http":
        direct = app.direct_calls(server, "streamable-http") if app.settings.fast_path else None
        http_options = http_run_options(host, auth_token, direct, allowed_hosts or [])
        mount_health(server, app)
        if openenv:
            from openenv_mcp.server.faces._openenv import mount_openenv
            from openenv_mcp.server.transports._http import OPENENV_PATH

            mount_openenv(server, app)
            log.info("OpenEnv's protocol: http://%s:%d%s", host, port, OPENENV_PATH)
        if web:
            from openenv_mcp.server.faces._web import WEB_PATH, mount_web

            mount_web(server, app, auth_token)
            log.info("the web page: http://%s:%d%s/", host, port, WEB_PATH)
    viewer = None
    if transport == "stdio" and web_port is not None:
        from openenv_mcp.server.faces._web import bind_viewer

        viewer = bind_viewer(web_port)
    # The token and live handles never reach a log line; what strangers can make
    # the HTTP stack log (refused connections, malformed requests, accept errors at
    # the descriptor limit) writes a line per kind and ten seconds, not per event.
    with redacting(auth_token), throttling("uvicorn.error"), accept_errors_throttled():
        await _serve(server, app, transport, host, port, http_options, viewer)


async def _serve(
    server: FastMCP,
    app: EnvApp,
    transport: Literal["stdio", "http"],
    host: str,
    port: int,
    http_options: dict[str, Any],
    viewer: Any,
) -> None:
    try:
        if transport == "stdio":
            async with anyio.create_task_group() as tg:
                # SIGTERM/SIGINT end a stdio server like EOF does: episodes closed,
                # exit status 0. (uvicorn handles them itself for HTTP.)
                tg.start_soon(_stop_on_signal, tg.cancel_scope)
                if viewer is not None:
                    from openenv_mcp.server.faces._web import run_viewer

                    tg.start_soon(run_viewer, server, app, viewer)
                if app.settings.fast_path:
                    await serve_stdio(server, app)
                else:
                    await server.run_stdio_async(show_banner=False)
                tg.cancel_scope.cancel()
        else:
            with _signals_as_interrupt():
                await server.run_http_async(
                    transport="http",
                    host=host,
                    port=port,
                    show_banner=False,
                    uvicorn_config=uvicorn_options(http_limits(app.settings)),
                    **http_options,
                )
    finally:
        await app.aclose()
        stuck = app.runtime.abandoned_calls()
        if stuck:
            _exit_without_waiting(stuck)


def _exit_without_waiting(stuck: int) -> NoReturn:
    """End the process now, leaving env calls that never returned behind.

    Python waits for every worker thread at exit and a thread cannot be stopped,
    so one env call hung past its timeout would keep the server alive forever.
    """
    log.error(
        "%d environment call(s) still running after their timeout cannot be stopped; "
        "exiting without waiting for them",
        stuck,
    )
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


@contextlib.contextmanager
def _signals_as_interrupt() -> Iterator[None]:
    """Let SIGTERM and SIGINT end an HTTP server with its episodes closed.

    uvicorn shuts down gracefully on either signal, then raises it again with
    the handler it found. For SIGTERM that is the default action, which kills
    the process before its episodes are closed (an env's ``close`` never runs)
    and reports death by signal; for SIGINT it is asyncio's runner, which
    cancels the main task, and the clean-up with it. As KeyboardInterrupt, raised
    where uvicorn returns, either unwinds through the episodes' clean-up, and
    the CLI exits with status 0, as over stdio.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread (uvicorn skips them too)
        return
    previous = {
        signum: signal.signal(signum, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
