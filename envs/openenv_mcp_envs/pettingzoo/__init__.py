"""Any PettingZoo environment over MCP (``openenv-mcp serve pettingzoo --id tictactoe_v3``),
one agent against seeded random players, or every agent a seat (``--seats``)."""

from openenv_mcp_envs.pettingzoo._game import PettingZooGame, classic_games, list_ids, resolve
from openenv_mcp_envs.pettingzoo.env import PettingZooConfig, PettingZooEnv

__all__ = [
    "PettingZooConfig",
    "PettingZooEnv",
    "PettingZooGame",
    "classic_games",
    "list_ids",
    "resolve",
]
