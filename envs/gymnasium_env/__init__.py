"""The old import path of :mod:`openenv_mcp_envs.gymnasium`, kept (its names, not its modules).

The bundled environments live under ``openenv_mcp_envs``, whose old top-level names
were OpenEnv's env packages' too; ``gymnasium_env`` is not, so it still imports.
"""

from openenv_mcp_envs.gymnasium import GymnasiumConfig, GymnasiumEnv, parse_kwargs

__all__ = ["GymnasiumConfig", "GymnasiumEnv", "parse_kwargs"]
