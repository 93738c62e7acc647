"""What a model reads of a reasoning problem: the title, the rules (one answer, scored by
reasoning-gym), the question, and how the answer scored."""

from __future__ import annotations

from typing import Any, Protocol

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration


class ReasoningView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.reasoning.env.ReasoningEnv`."""

    @property
    def dataset(self) -> str: ...

    @property
    def level(self) -> int: ...


class ReasoningNarration(Narration[ReasoningView]):
    """One question of a reasoning-gym dataset; one answer, scored 0-1."""

    @property
    def title(self) -> str:
        env = self.env
        if not env.dataset:
            return "Reasoning problems (reasoning-gym)"
        return f"Reasoning: {env.dataset.replace('_', ' ')} (level {env.level})"

    def instructions(self) -> str:
        return "\n".join(
            [
                "Each episode is one question from a reasoning-gym dataset (arithmetic, "
                "counting, sorting, puzzles). Read it, then answer with step(action=ANSWER): "
                "the answer alone, in the form the question asks for, with no explanation.",
                "You get one answer. It is scored by the dataset's own checker from 0 to 1 "
                "(1: right; some datasets give partial credit, e.g. an answer that holds the "
                "right one among other text), the score is the reward, and the episode ends.",
            ]
        )

    def action_description(self) -> str:
        return "Your final answer to the question, as text, in the form it asks for."

    def observation_text(self, observation: Any) -> str | None:
        return str(observation) if isinstance(observation, str) else None

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        score = result.info.get("score")
        if not isinstance(score, int | float):
            return []
        if score == 1.0:
            return ["Correct: score 1"]
        if score > 0:
            return [f"Partly right: score {score:.3g}"]
        return ["Wrong: score 0"]
