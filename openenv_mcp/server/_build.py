"""``build_server`` and ``serve``: from an environment name to a running server."""

from __future__ import annotations

import logging
import signal
from typing import Any, Literal

import anyio
from fastmcp import FastMCP
from pydantic import BaseModel, ValidationError

from openenv_mcp import __version__
from openenv_mcp.environment import Environment
from openenv_mcp.errors import ArgumentError
from openenv_mcp.registry import get_env_class
from openenv_mcp.server._app import EnvApp
from openenv_mcp.server._http import http_run_options
from openenv_mcp.server._lane import ToolLane
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server._stdio import serve_stdio

__all__ = ["build_server", "get_app", "make_config", "serve"]

log = logging.getLogger("openenv_mcp.server")

_APP_ATTR = "_openenv_app"


def make_config(env_cls: type[Environment], options: dict[str, Any]) -> BaseModel:
    """Validate construction options against the environment's ``Config``.

    Raises:
        ArgumentError: naming each bad option, what was expected and what came.
    """
    try:
        return env_cls.Config.model_validate(options)
    except ValidationError as exc:
        problems = []
        fields = env_cls.Config.model_fields
        for err in exc.errors(include_url=False):
            name = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                from openenv_mcp.errors import did_you_mean

                problems.append(
                    f"unknown option {name!r}.{did_you_mean(name, fields)} "
                    f"Options: {', '.join(fields)}"
                )
            else:
                problems.append(f"option {name!r}: {err['msg']}, got {err.get('input')!r}")
        raise ArgumentError(f"{env_cls.name}: " + "; ".join(problems)) from None


def build_server(
    env: str | type[Environment],
    *,
    settings: ServerSettings | None = None,
    **options: Any,
) -> FastMCP:
    """Build a FastMCP server that mounts one environment.

    Args:
        env: a registered name (``"atari"``) or an :class:`Environment` subclass.
        settings: episode limits and tool options (defaults: :class:`ServerSettings`).
        **options: the environment's construction options (its ``Config`` fields).

    Returns:
        The server; run it with :func:`serve`, or connect to it in memory with
        ``fastmcp.Client(server)`` or ``MCPEnvClient(server)``.
    """
    env_cls = get_env_class(env) if isinstance(env, str) else env
    config = make_config(env_cls, options)
    app = EnvApp(env_cls, config, settings or ServerSettings())
    server = FastMCP(
        name=f"openenv-{env_cls.name}",
        instructions=(
            f"{env_cls.description} Call reset to start an episode (it returns an "
            "episode_id and the first observation), then step with an action, or call an "
            "action tool directly. Episodes end with terminated or truncated; reset to play "
            "again."
        ),
        version=__version__,
        mask_error_details=True,
    )
    app.mount(server)
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
) -> None:
    """Run ``server`` until the client leaves (stdio EOF) or the process is stopped.

    Over HTTP the server binds ``host`` (loopback by default), validates Host
    and Origin headers, and, with ``auth_token``, requires
    ``Authorization: Bearer <token>`` (mandatory off loopback).
    Every episode is closed on the way out, freeing its environment.

    Raises:
        ArgumentError: an HTTP bind off loopback without ``auth_token``.
    """
    app = get_app(server)
    http_options = {}
    if transport == "http":
        lane = ToolLane(server, app, "streamable-http") if app.settings.fast_lane else None
        http_options = http_run_options(host, auth_token, lane)
    try:
        if transport == "stdio":
            async with anyio.create_task_group() as tg:
                # SIGTERM/SIGINT end a stdio server like EOF does: episodes closed,
                # exit status 0. (uvicorn handles them itself for HTTP.)
                tg.start_soon(_stop_on_signal, tg.cancel_scope)
                if app.settings.fast_lane:
                    await serve_stdio(server, app)
                else:
                    await server.run_stdio_async(show_banner=False)
                tg.cancel_scope.cancel()
        else:
            await server.run_http_async(
                transport="http",
                host=host,
                port=port,
                show_banner=False,
                # uvicorn's own log config writes to stdout; route its records
                # through the process's logging (stderr) instead.
                uvicorn_config={"log_config": None},
                **http_options,
            )
    finally:
        await app.episodes.close_all()
