"""OpenEnv's ``atari_env`` models (``AtariEnv``, its typed client), as ``--openenv`` speaks them.

The screen travels as OpenEnv's Atari server sends it: the frame as a flat list of
integers beside its shape; ``legal_actions`` are indices into the served action set.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from openenv_mcp.errors import InvalidAction
from openenv_mcp.openenv import (
    OpenEnvAction,
    OpenEnvModels,
    OpenEnvObservation,
    OpenEnvState,
    View,
)


class AtariAction(OpenEnvAction):
    action_id: int
    game_name: str = "pong"
    obs_type: Literal["rgb", "grayscale", "ram"] = "rgb"
    full_action_space: bool = False


class AtariObservation(OpenEnvObservation):
    screen: list[int]
    screen_shape: list[int]
    legal_actions: list[int]
    lives: int = 0
    episode_frame_number: int = 0
    frame_number: int = 0


class AtariState(OpenEnvState):
    game_name: str = "pong"
    obs_type: Literal["rgb", "grayscale", "ram"] = "rgb"
    full_action_space: bool = False
    mode: int | None = None
    difficulty: int | None = None
    repeat_action_probability: float = 0.0
    frameskip: int = 4


class AtariModels(OpenEnvModels):
    """The game this server plays: the client's ``game_name`` and the other settings it
    sends with every action describe OpenEnv's server, which is configured at start as
    this one is, so they are not read."""

    Action = AtariAction
    Observation = AtariObservation
    State = AtariState
    package = "atari_env"

    def _names(self) -> list[str]:
        assert self.spec.action_set is not None  # an Atari game names its actions
        return list(self.spec.action_set.names)

    def action(self, action: Any) -> Any:
        names = self._names()
        if not 0 <= action.action_id < len(names):
            raise InvalidAction(
                f"action_id must be a legal action, 0..{len(names) - 1} "
                f"({', '.join(f'{i}={n}' for i, n in enumerate(names))}), got {action.action_id}"
            )
        return action.action_id

    def observation(self, view: View) -> dict[str, Any]:
        screen = np.ascontiguousarray(view["observation"])
        info = view.get("info") or {}
        return {
            "screen": screen.ravel(),  # written as a flat JSON list, straight from the array
            "screen_shape": list(screen.shape),
            "legal_actions": list(range(len(self._names()))),
            "lives": int(info.get("lives", 0)),
            "episode_frame_number": int(info.get("episode_frame_number", 0)),
            "frame_number": int(info.get("frame_number", 0)),
        }

    def state(self, view: View) -> dict[str, Any]:
        config = self.config
        return {
            "game_name": config.game,
            "obs_type": config.obs_type,
            "full_action_space": config.full_action_space,
            "mode": config.mode,
            "difficulty": config.difficulty,
            "repeat_action_probability": config.repeat_action_probability,
            "frameskip": config.frameskip,
        }
