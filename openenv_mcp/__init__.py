"""openenv-mcp: every RL environment as a standard MCP server.

What users import: the environment contract (and its optional narration), the
server builder, the client and the errors' module. Every name is loaded on first
use, so importing the package is cheap (the server stack loads only when a server
is built).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openenv_mcp._util.lazy import lazy_exports
from openenv_mcp._util.version import __version__ as __version__

__all__ = [
    "Action",
    "ActionSet",
    "EnvTool",
    "Environment",
    "MCPEnvClient",
    "Narration",
    "Resources",
    "ServerSettings",
    "Serving",
    "StepResult",
    "build_server",
    "serve",
]

_EXPORTS = {
    "Action": "openenv_mcp.environment",
    "ActionSet": "openenv_mcp.environment",
    "EnvTool": "openenv_mcp.environment",
    "Environment": "openenv_mcp.environment",
    "StepResult": "openenv_mcp.environment",
    "Resources": "openenv_mcp.environment",
    "Serving": "openenv_mcp.environment",
    "Narration": "openenv_mcp.narration",
    "MCPEnvClient": "openenv_mcp.client",
    "ServerSettings": "openenv_mcp.server",
    "build_server": "openenv_mcp.server",
    "serve": "openenv_mcp.server",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from openenv_mcp.client import MCPEnvClient
    from openenv_mcp.environment import (
        Action,
        ActionSet,
        Environment,
        EnvTool,
        Resources,
        Serving,
        StepResult,
    )
    from openenv_mcp.narration import Narration
    from openenv_mcp.server import ServerSettings, build_server, serve
