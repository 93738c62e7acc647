"""OpenEnv environments over MCP: a running OpenEnv server, or an OpenEnv class in process."""

from openenv_env.env import OpenEnvConfig, OpenEnvEnv, RubricBreakdown

__all__ = ["OpenEnvConfig", "OpenEnvEnv", "RubricBreakdown"]
