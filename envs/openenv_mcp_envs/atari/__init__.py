"""Atari 2600 games over MCP, through ale-py's bundled ROMs (``openenv-mcp serve atari``)."""

from openenv_mcp_envs.atari._emulator import AtariConfig, AtariEmulator, list_games
from openenv_mcp_envs.atari.env import AtariEnv

__all__ = ["AtariConfig", "AtariEmulator", "AtariEnv", "list_games"]
