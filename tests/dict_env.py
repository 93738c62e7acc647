"""A small Gymnasium environment with ``Dict`` observation and action spaces.

Gymnasium ships none, so this one stands in for goal-conditioned envs: reach a
goal on a plane by moving (a ``Box`` inside the action ``Dict``), and say when
you are there (a ``Discrete``). Served as ``gymnasium --id
tests.dict_env:DictReach-v0`` (Gymnasium's ``module:Id`` form imports this
module, which registers it).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["ID", "DictReach"]

ID = "tests.dict_env:DictReach-v0"
MAX_STEPS = 50


class DictReach(gym.Env[dict[str, Any], dict[str, Any]]):
    """Move to a random goal; reward is minus the distance left."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {
                "position": spaces.Box(-10.0, 10.0, (2,), np.float32),
                "goal": spaces.Box(-10.0, 10.0, (2,), np.float32),
                "steps": spaces.Discrete(MAX_STEPS + 1),
            }
        )
        self.action_space = spaces.Dict(
            {"move": spaces.Box(-1.0, 1.0, (2,), np.float32), "stop": spaces.Discrete(2)}
        )
        self._position = np.zeros(2, np.float32)
        self._goal = np.zeros(2, np.float32)
        self._steps = 0

    def _obs(self) -> dict[str, Any]:
        return {"position": self._position.copy(), "goal": self._goal.copy(), "steps": self._steps}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self._goal = self.np_random.uniform(-5, 5, 2).astype(np.float32)
        self._position = np.zeros(2, np.float32)
        self._steps = 0
        return self._obs(), {"distance": float(np.linalg.norm(self._goal))}

    def step(
        self, action: dict[str, Any]
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        move = np.asarray(action["move"], np.float32)
        self._position = np.clip(self._position + move, -10, 10).astype(np.float32)
        self._steps += 1
        distance = float(np.linalg.norm(self._goal - self._position))
        terminated = bool(int(action["stop"]) == 1 and distance < 1.0)
        truncated = self._steps >= MAX_STEPS and not terminated
        return self._obs(), -distance, terminated, truncated, {"distance": distance}


gym.register(id="DictReach-v0", entry_point=DictReach, max_episode_steps=MAX_STEPS)
