"""Actions are checked where the episode lives: parsed by its own environment, and held
to the last ``info["action_mask"]`` (Gymnasium's convention)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.errors import InvalidAction
from openenv_mcp.pipeline.base import Layer, Moment
from openenv_mcp.pipeline.core import legal_actions

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import LegalActions, Step

__all__ = ["ActionMask"]


class ActionMask(Layer):
    """Parses a wire action (``env.parse_action``) and refuses one the mask marks illegal;
    answers which actions are legal now."""

    def __init__(self, inner: Layer) -> None:
        super().__init__(inner)
        env = self.episode.env
        space = env.action_space
        self._start = int(space.start) if isinstance(space, spaces.Discrete) else None
        self._enforce = type(env).serving.enforce_mask

    def step(self, op: Step, action: Any) -> Moment:
        state = self.episode
        parsed = state.env.parse_action(action)
        if self._enforce and state.mask is not None:  # no mask: nothing to hold it to
            self.check(parsed)
        return self.inner.step(op, parsed)

    def legal_actions(self, op: LegalActions) -> dict[str, Any]:
        """The actions the last mask allows (all before the first reset), by number and name."""
        state = self.episode
        legal = self.legal_now() if state.status != "new" else None
        if legal is None:
            return self.inner.legal_actions(op)
        return legal_actions(state.env, legal, state.narration.action_name)

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
