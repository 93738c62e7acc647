"""The old import path of :mod:`openenv_mcp_envs.openenv`, kept (its names, not its modules).

The bundled environments live under ``openenv_mcp_envs``, whose old top-level names
were OpenEnv's env packages' too; ``openenv_env`` is not, so it still imports.
"""

from openenv_mcp_envs.openenv import OpenEnvConfig, OpenEnvEnv, RubricBreakdown

__all__ = ["OpenEnvConfig", "OpenEnvEnv", "RubricBreakdown"]
