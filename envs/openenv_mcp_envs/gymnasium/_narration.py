"""What a model reads of a Gymnasium environment: its id as the title, the observation
in words (``_known.py``'s describers, else a generic text)."""

from __future__ import annotations

from typing import Any, Protocol

from openenv_mcp.narration import Narrated, Narration

__all__ = ["GymnasiumNarration", "GymnasiumView"]


class _Id(Protocol):
    @property
    def id(self) -> str: ...


class GymnasiumView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.gymnasium.env.GymnasiumEnv`
    (named here, so this module need not import the env's, which imports it)."""

    @property
    def config(self) -> _Id: ...

    def describe(self, observation: Any) -> str: ...


class GymnasiumNarration(Narration[GymnasiumView]):
    """The id and the observation in words; the action names come from the action set."""

    @property
    def title(self) -> str:
        return f"Gymnasium {self.env.config.id}"

    def observation_text(self, observation: Any) -> str:
        return self.env.describe(observation)
