"""What a model reads of a Gymnasium environment: its id as the title, the observation
in words (``_known.py``'s describers, else a generic text)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openenv_mcp.narration import Narration

if TYPE_CHECKING:
    from openenv_mcp_envs.gymnasium.env import GymnasiumEnv

__all__ = ["GymnasiumNarration"]


class GymnasiumNarration(Narration["GymnasiumEnv"]):
    """The id and the observation in words; the action names come from the action set."""

    env: GymnasiumEnv

    @property
    def title(self) -> str:
        return f"Gymnasium {self.env.config.id}"

    def observation_text(self, observation: Any) -> str:
        return self.env.describe(observation)
