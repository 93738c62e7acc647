"""OpenEnv's ``openspiel_env`` models (``OpenSpielEnv``, its typed client), as ``--openenv``
speaks them: the game this server plays (the client's ``game_name`` is not read)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from openenv_mcp.openenv import (
    OpenEnvAction,
    OpenEnvModels,
    OpenEnvObservation,
    OpenEnvState,
    View,
)


class OpenSpielAction(OpenEnvAction):
    action_id: int
    game_name: str = "catch"
    game_params: dict[str, Any] = Field(default_factory=dict)


class OpenSpielObservation(OpenEnvObservation):
    info_state: list[float]
    legal_actions: list[int]
    game_phase: str = "playing"
    current_player_id: int = 0
    opponent_last_action: int | None = None


class OpenSpielState(OpenEnvState):
    game_name: str = "unknown"
    agent_player: int = 0
    opponent_policy: str = "random"
    game_params: dict[str, Any] = Field(default_factory=dict)
    num_players: int = 1


class OpenSpielModels(OpenEnvModels):
    Action = OpenSpielAction
    Observation = OpenSpielObservation
    State = OpenSpielState
    package = "openspiel_env"

    def action(self, action: Any) -> Any:
        return action.action_id

    def observation(self, view: View) -> dict[str, Any]:
        info = view.get("info") or {}
        over = bool(view.get("terminated") or view.get("truncated"))
        others = [
            m
            for m in info.get("moves", [])
            if m.get("player", -1) >= 0 and m.get("player") != info.get("player")
        ]
        state = view.get("observation")
        return {
            "info_state": [] if state is None else np.asarray(state, np.float64).ravel(),
            "legal_actions": [] if over else list(info.get("legal_actions", [])),
            "game_phase": "terminal" if over else "initial" if not view.get("step") else "playing",
            "current_player_id": int(info.get("current_player", 0)),
            "opponent_last_action": int(others[-1]["action"]) if others else None,
        }

    def state(self, view: View) -> dict[str, Any]:
        info = view.get("info") or {}
        return {
            "game_name": self.config.game,
            "agent_player": int(info.get("player", 0)),
            "opponent_policy": str(self.config.opponent),
            "game_params": dict(self.config.game_params),
            "num_players": len(info.get("returns", [])) or 1,
        }
