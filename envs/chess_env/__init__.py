"""Chess over MCP (``openenv-mcp serve chess``): moves in SAN or UCI against Stockfish, a
built-in engine, a random mover, or yourself, with the board as a picture, a diagram and FEN."""

from chess_env._engine import BuiltinEngine, RandomOpponent, StockfishEngine, find_stockfish
from chess_env.env import ChessConfig, ChessEnv, ChessSnapshot

__all__ = [
    "BuiltinEngine",
    "ChessConfig",
    "ChessEnv",
    "ChessSnapshot",
    "RandomOpponent",
    "StockfishEngine",
    "find_stockfish",
]
