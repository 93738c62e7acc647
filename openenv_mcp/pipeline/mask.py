"""Actions are checked where the episode lives: parsed by its own environment, and held
to the last ``info["action_mask"]`` (Gymnasium's convention)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.errors import InvalidAction
from openenv_mcp.pipeline.base import Layer, Moment

__all__ = ["ActionMask"]


class ActionMask(Layer):
    """Parses a wire action (``env.parse_action``) and refuses one the mask marks illegal."""

    def __init__(self, inner: Layer) -> None:
        super().__init__(inner)
        env = self.episode.env
        space = env.action_space
        self._start = int(space.start) if isinstance(space, spaces.Discrete) else None
        self._enforce = type(env).serving.enforce_mask

    def step(self, action: Any) -> Moment:
        parsed = self.episode.env.parse_action(action)
        if self._enforce:
            self.check(parsed)
        return self.inner.step(parsed)

    def legal_now(self) -> list[int] | None:
        """The actions legal now, where a mask says (``None``: every action of the space)."""
        mask, start = self.episode.mask, self._start
        if mask is None or start is None or mask.ndim != 1:
            return None
        return [start + int(i) for i in np.flatnonzero(mask)]

    def check(self, action: Any) -> None:
        """Refuse an action the last ``info["action_mask"]`` marks illegal."""
        legal = self.legal_now()
        if legal is None or int(action) in legal:
            return
        actions = self.episode.env.action_set
        named = actions.describe(legal) if actions is not None else ", ".join(map(str, legal))
        raise InvalidAction(
            f"action {int(action)} is not legal now (info.action_mask); legal now: {named}"
        )
