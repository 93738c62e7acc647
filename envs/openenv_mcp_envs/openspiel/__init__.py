"""Every OpenSpiel game of turns or simultaneous moves over MCP
(``openenv-mcp serve openspiel --game NAME``)."""

from openenv_mcp_envs.openspiel._games import list_games, unsupported_games
from openenv_mcp_envs.openspiel.env import OpenSpielConfig, OpenSpielEnv

__all__ = ["OpenSpielConfig", "OpenSpielEnv", "list_games", "unsupported_games"]
