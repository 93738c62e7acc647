"""Any registered Gymnasium environment as an openenv-mcp environment.

``openenv-mcp serve gymnasium --id Blackjack-v1 --kwargs natural=true``
"""

from openenv_mcp_envs.gymnasium.env import GymnasiumConfig, GymnasiumEnv, parse_kwargs

__all__ = ["GymnasiumConfig", "GymnasiumEnv", "parse_kwargs"]
