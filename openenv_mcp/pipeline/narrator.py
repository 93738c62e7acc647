"""Words for a model: each step's events (a life lost, the game's own, the episode's
end). The paragraph every answer opens with is the view's (:mod:`.view`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from openenv_mcp.environment import StepResult
from openenv_mcp.pipeline.base import Layer, Moment

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import Step

__all__ = ["Narrator", "lost_a_life"]

log = logging.getLogger("openenv_mcp.server")


def lost_a_life(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether ``info["lives"]`` went down between two infos."""
    lives_before, lives = before.get("lives"), after.get("lives")
    return isinstance(lives, int) and isinstance(lives_before, int) and lives < lives_before


class Narrator(Layer):
    """Adds each step's events to its moment."""

    def step(self, op: Step, action: Any) -> Moment:
        before = self.episode.info
        moment = self.inner.step(op, action)
        moment.events += self.events(before, moment)
        return moment

    def events(self, before: dict[str, Any], moment: Moment) -> list[str]:
        """A step's events, in words: a life lost, the environment's own, the episode's end."""
        state = self.episode
        found: list[str] = []
        if lost_a_life(before, moment.info):
            lives = int(moment.info["lives"])
            lost = int(before["lives"]) - lives
            found.append(f"Lost {'a life' if lost == 1 else f'{lost} lives'} ({lives} left)")
        result = StepResult(
            moment.observation, moment.env_reward, moment.terminated, moment.truncated, moment.info
        )
        try:
            found += [str(e) for e in state.narration.step_events(before, result)]
        except Exception:  # events are words for a model: they must never break a step
            log.exception("%s's step_events failed", type(state.narration).__name__)
        if moment.terminated:
            found.append(f"The episode is over (terminated, step {state.step})")
        elif moment.truncated:
            found.append(f"The episode was cut short (truncated at step {state.step})")
        return found
