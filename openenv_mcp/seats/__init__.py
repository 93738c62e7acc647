"""Seats: games of several players, every player a seat its own client drives.

The contract's optional seats facet (:class:`SeatedGame`, from
:meth:`openenv_mcp.Environment.seated_game`) and the table that holds one such game
for its seats (turns, simultaneous moves, built-in opponents, the joint record). The
server serves each seat as an ordinary episode
(:mod:`openenv_mcp.server.episodes._seat_env`), so every seat's answers, recording and
rewards are an episode's.
"""

from __future__ import annotations

from openenv_mcp.seats._check import check_game
from openenv_mcp.seats._game import Move, SeatedGame
from openenv_mcp.seats._table import Answer, Table, parse_seats

__all__ = ["Answer", "Move", "SeatedGame", "Table", "check_game", "parse_seats"]
