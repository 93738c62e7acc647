"""openenv-mcp: every RL environment as a standard MCP server.

What users import: the environment contract, the server builder, and the
errors. The client lives in :mod:`openenv_mcp.client`.
"""

__version__ = "0.1.0"

from openenv_mcp.environment import (
    Action,
    ActionSet,
    Environment,
    EnvTool,
    ObservationSpec,
    StepResult,
)
from openenv_mcp.server import ServerSettings, build_server, serve

__all__ = [
    "Action",
    "ActionSet",
    "EnvTool",
    "Environment",
    "ObservationSpec",
    "ServerSettings",
    "StepResult",
    "build_server",
    "serve",
]
