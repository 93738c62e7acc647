"""Words for a model: each step's events (a life lost, the game's own, the episode's
end) and the one paragraph every answer opens with."""

from __future__ import annotations

import logging
from typing import Any

from openenv_mcp.environment import StepResult
from openenv_mcp.errors import InvalidAction, OpenEnvError
from openenv_mcp.pipeline.base import Layer, Moment
from openenv_mcp.spaces import is_array_space

__all__ = ["Narrator", "lost_a_life"]

log = logging.getLogger("openenv_mcp.server")

#: Longest observation text quoted in an answer.
TEXT_LIMIT = 300
_ACTION_LABEL = 40


def lost_a_life(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether ``info["lives"]`` went down between two infos."""
    lives_before, lives = before.get("lives"), after.get("lives")
    return isinstance(lives, int) and isinstance(lives_before, int) and lives < lives_before


class Narrator(Layer):
    """Adds each step's events to its moment, and writes the text of every answer."""

    def step(self, action: Any) -> Moment:
        before = self.episode.info
        moment = self.inner.step(action)
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

    # -- the text of an answer -------------------------------------------------------------

    def reset_text(self, seed: int | None) -> str:
        """The first answer of an episode: what it is, how it stands, what to do."""
        state = self.episode
        seeded = f", seed {seed}" if seed is not None else ""
        head = f"New episode of {state.narration.title} (episode {state.episode_id}{seeded})"
        return self.text(head, [], opening=True)

    def restore_text(self) -> str:
        """The answer of a reset from a snapshot."""
        state = self.episode
        head = (
            f"Episode {state.episode_id} of {state.narration.title} continues from a snapshot "
            f"at step {state.step} (return {state.episode_return:g})"
        )
        return self.text(head, [], opening=True)

    def step_text(self, action: Any, moment: Moment) -> str:
        """The answer of a step (``moment`` may sum several: ``repeat``)."""
        state = self.episode
        label = self.action_label(action) + (f" x{moment.taken}" if moment.taken > 1 else "")
        head = (
            f"Step {state.step} ({label}): reward {moment.reward:+g}, "
            f"return {state.episode_return:g}"
        )
        return self.text(head, moment.events)

    def look_text(self) -> str:
        """The answer of ``state``."""
        state = self.episode
        head = (
            f"Episode {state.episode_id} of {state.narration.title} at step {state.step}: "
            f"return {state.episode_return:g}"
        )
        return self.text(head, [])

    def text(self, head: str, events: list[str], *, opening: bool = False) -> str:
        """What a model reads: what happened, the state, and what to do next."""
        state = self.episode
        lives = state.info.get("lives")
        if isinstance(lives, int) and not isinstance(lives, bool) and lives > 0:
            head += f", {lives} {'life' if lives == 1 else 'lives'} left"
        sentences = [head, *events]
        if state.status == "ended":
            why = "terminated" if state.terminated else "truncated"
            sentences.append(
                f"Episode over ({why}) after {state.step} steps with return "
                f"{state.episode_return:g}: call reset to play again"
            )
        words = self._words()
        if words is not None:
            cut = words if len(words) <= TEXT_LIMIT else words[: TEXT_LIMIT - 3] + "..."
            sentences.append(f"Observation: {cut}")
        briefing = state.narration.briefing() if opening else ""
        if briefing:
            sentences.append(briefing)
        actions = state.env.action_set
        if opening and actions is not None:
            legal = "; ".join(f"{a.name} = {a.meaning}" if a.meaning else a.name for a in actions)
            sentences.append(f"Legal actions: {legal}")
        return ". ".join(s.rstrip(".") for s in sentences) + "."

    def action_label(self, action: Any) -> str:
        """An action as a model named it, or by its name where the action set has one."""
        actions = self.episode.env.action_set
        if actions is not None:
            try:
                return actions.by_id(actions.resolve(action)).name
            except (InvalidAction, IndexError):
                pass
        text = action if isinstance(action, str) else repr(action)
        return text if len(text) <= _ACTION_LABEL else text[: _ACTION_LABEL - 3] + "..."

    def _words(self) -> str | None:
        state = self.episode
        try:
            words = state.narration.observation_text(state.observation)
        except OpenEnvError:
            raise
        except Exception:  # a describer must never break a step
            log.exception("%s.observation_text failed", type(state.narration).__name__)
            words = None
        if words is None and not is_array_space(state.env.observation_space):
            words = repr(state.observation)
        return words
