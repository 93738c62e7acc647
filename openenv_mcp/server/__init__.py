"""Serve an environment as a standard MCP server.

``build_server("echo")`` returns a FastMCP server whose tools are ``reset``,
``step``, ``state``, ``close`` (plus ``snapshot`` where the environment
supports it), the environment's own tools, and one tool per discrete action;
its static metadata are MCP resources. :func:`serve` runs it over stdio or
Streamable HTTP.
"""

from openenv_mcp.server._build import build_server, get_app, serve
from openenv_mcp.server._settings import ServerSettings

__all__ = ["ServerSettings", "build_server", "get_app", "serve"]
