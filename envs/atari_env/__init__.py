"""Atari 2600 games over MCP, through ale-py's bundled ROMs (``openenv-mcp serve atari``)."""

from atari_env._emulator import AtariConfig, AtariEmulator, list_games
from atari_env.env import AtariEnv

__all__ = ["AtariConfig", "AtariEmulator", "AtariEnv", "list_games"]
