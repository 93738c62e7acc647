"""Serve an environment as a standard MCP server.

``build_server("echo")`` returns a FastMCP server whose tools are ``reset``,
``step``, ``state``, ``close`` (plus ``snapshot`` where the environment
supports it), the environment's own tools, and one tool per named action;
its static description is an MCP resource. :func:`serve` runs it over stdio or
Streamable HTTP.

The rooms, by concern: ``tools/`` (which tools a profile lists, their arguments, what
each profile does, calls answered without FastMCP's stack, reply shapes), ``episodes/``
(handles, locks and limits; what each tool does; where each episode's pipeline lives:
inline, threads, worker processes; the pipeline itself is :mod:`openenv_mcp.pipeline`),
``transports/`` (stdio and its first second, the episode host, Streamable HTTP and its
guard), ``faces/`` (the web page, OpenEnv's protocol); and here the composition:
``_app`` (one environment served), ``_build`` (build and serve), ``_settings``.
``openenv_mcp.wire.sdk`` holds every reliance on FastMCP's internals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openenv_mcp._util.lazy import lazy_exports

__all__ = ["EnvApp", "ServerSettings", "build_server", "get_app", "serve"]

_EXPORTS = {
    "EnvApp": "openenv_mcp.server._app",
    "ServerSettings": "openenv_mcp.server._settings",
    "build_server": "openenv_mcp.server._build",
    "get_app": "openenv_mcp.server._build",
    "serve": "openenv_mcp.server._build",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from openenv_mcp.server._app import EnvApp
    from openenv_mcp.server._build import build_server, get_app, serve
    from openenv_mcp.server._settings import ServerSettings
