"""OpenEnv's ``chess_env`` models (``ChessEnv``, its typed client), as ``--openenv`` speaks them.

OpenEnv's client reads ``done`` and ``reward`` from inside the observation, where OpenEnv's
own server never puts them (so against it a game never ends): here they are there too,
fields its ``Observation`` model has.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from openenv_mcp.openenv import (
    OpenEnvAction,
    OpenEnvModels,
    OpenEnvObservation,
    OpenEnvState,
    View,
)


class ChessAction(OpenEnvAction):
    move: str


class ChessObservation(OpenEnvObservation):
    fen: str = ""
    legal_moves: list[str] = Field(default_factory=list)
    is_check: bool = False
    result: str | None = None
    done: bool = False
    reward: float | None = None


class ChessState(OpenEnvState):
    fen: str = ""
    current_player: str = "white"
    move_history: list[str] = Field(default_factory=list)


class ChessModels(OpenEnvModels):
    """An illegal move is a step costing ``illegal_penalty`` (as OpenEnv's -0.1)."""

    Action = ChessAction
    Observation = ChessObservation
    State = ChessState
    package = "chess_env"

    def action(self, action: Any) -> Any:
        return action.move

    def observation(self, view: View) -> dict[str, Any]:
        info = view.get("info") or {}
        result = info.get("result", "*")
        return {
            "fen": info.get("fen", ""),
            "legal_moves": list(info.get("legal_moves", [])),
            "is_check": bool(info.get("check", False)),
            "result": None if result == "*" else result,
            "done": bool(view.get("terminated") or view.get("truncated")),
            "reward": view.get("reward"),
        }

    def state(self, view: View) -> dict[str, Any]:
        info = view.get("info") or {}
        return {
            "fen": info.get("fen", ""),
            "current_player": info.get("turn", "white"),
            "move_history": list(info.get("history", [])),
        }
