"""Chess over MCP (``openenv-mcp serve chess``): moves in SAN or UCI against Stockfish, a
built-in engine, a random mover, or yourself, with the board as a picture, a diagram and FEN."""

from openenv_mcp_envs.chess._engine import (
    BuiltinEngine,
    RandomOpponent,
    StockfishEngine,
    find_stockfish,
)
from openenv_mcp_envs.chess.env import ChessConfig, ChessEnv, ChessSnapshot

__all__ = [
    "BuiltinEngine",
    "ChessConfig",
    "ChessEnv",
    "ChessSnapshot",
    "RandomOpponent",
    "StockfishEngine",
    "find_stockfish",
]
