"""OpenEnv environments over MCP: a running OpenEnv server, or an OpenEnv class in process."""

from openenv_mcp_envs.openenv.env import OpenEnvConfig, OpenEnvEnv, RubricBreakdown

__all__ = ["OpenEnvConfig", "OpenEnvEnv", "RubricBreakdown"]
