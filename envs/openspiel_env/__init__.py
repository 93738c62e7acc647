"""Every sequential OpenSpiel game over MCP (``openenv-mcp serve openspiel --game NAME``)."""

from openspiel_env._games import list_games, unsupported_games
from openspiel_env.env import OpenSpielConfig, OpenSpielEnv

__all__ = ["OpenSpielConfig", "OpenSpielEnv", "list_games", "unsupported_games"]
