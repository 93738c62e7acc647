"""What every layer of the episode pipeline shares: the episode's state, a moment of
it, a saved episode, and the layer base class (Gymnasium's ``Wrapper``, for episodes).

The pipeline is a chain of small layers around one environment, innermost first:
:class:`~.core.EnvCore` (the env and the episode's counters), then
:class:`~.mask.ActionMask`, :class:`~.order.OrderEnforcing`,
:class:`~.rewards.ServedRewards`, :class:`~.tasks.JudgeTask`,
:class:`~.recorder.Recorder`, :class:`~.tasks.StartTask`, :class:`~.narrator.Narrator`
and :class:`~.repeat.Repeat`; outermost,
:class:`~.view.View` writes the answer (its structured view, its text, its frame).
Every layer gets the operation itself (:mod:`.ops`), so what a layer needs of the
call travels with it. Each layer does one thing and passes the rest on, so each is
tested alone; none imports MCP, so the same pipeline runs in the server process and
in a worker process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from openenv_mcp.environment import Environment
from openenv_mcp.narration import Narration
from openenv_mcp.pipeline.answers import SavedEpisode, Status

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import (
        CallTool,
        Close,
        Frame,
        LegalActions,
        Look,
        Reset,
        Restore,
        Snapshot,
        Step,
        Summary,
    )

__all__ = ["EpisodeState", "Layer", "Moment", "SavedEpisode", "Status"]


@dataclass
class EpisodeState:
    """The episode as every layer sees it; each field has one layer that writes it.

    Attributes:
        episode_id: the handle of the episode (named in answers).
        env: the environment instance.
        narration: its words for a model.
        status, step, terminated, truncated, observation, info, mask, env_return:
            written by :class:`~.core.EnvCore`.
        reward: the last call's reward (all its steps'), written by
            :class:`~.repeat.Repeat` (zero after a reset or a restore).
        episode_return, scored: written by :class:`~.rewards.ServedRewards` (the sum of
            served rewards; the trajectory rewards' scores at the end).
        recording: written by :class:`~.recorder.Recorder` (the episode's file).
        task: written by :class:`~.tasks.JudgeTask`: the task the episode started (its id,
            split, index...) and, once it ended, whether it succeeded; ``None``: no task.
    """

    episode_id: str
    env: Environment[Any]
    narration: Narration[Any]
    status: Status = "new"
    step: int = 0
    terminated: bool = False
    truncated: bool = False
    observation: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    mask: np.ndarray | None = None
    env_return: float = 0.0
    reward: float = 0.0
    episode_return: float = 0.0
    scored: dict[str, Any] | None = None
    recording: str | None = None
    task: dict[str, Any] | None = None


@dataclass
class Moment:
    """What one operation did to the episode, as it passes out through the layers.

    Attributes:
        observation, info, terminated, truncated: after the operation.
        reward: the reward served (the env's own, or the composed rewards' sum).
        env_reward: the environment's own reward.
        action: the action as the environment took it (parsed), on a step.
        breakdown: each served reward's part (``None`` without served rewards).
        events: what happened, in words for a model.
        trajectory: at the episode's end, the trajectory rewards' scores and credit.
        taken: steps this operation took (``repeat``).
        recording_error: why recording failed in this operation, where the server
            records on without it (``record_errors="continue"``).
    """

    observation: Any
    info: dict[str, Any]
    reward: float = 0.0
    env_reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    action: Any = None
    breakdown: dict[str, float] | None = None
    events: list[str] = field(default_factory=list)
    trajectory: dict[str, Any] | None = None
    taken: int = 1
    recording_error: str | None = None

    @property
    def ended(self) -> bool:
        """Whether the episode ended with this moment."""
        return self.terminated or self.truncated


class Passing:
    """What every layer and the view pass straight through to ``inner`` unless they
    override it: the operations answered below, as they are.

    Args:
        inner: the next layer in.
    """

    def __init__(self, inner: Layer) -> None:
        self.inner = inner
        self.episode: EpisodeState = inner.episode

    def snapshot(self, op: Snapshot) -> SavedEpisode:
        """The episode's full state."""
        return self.inner.snapshot(op)

    def call_tool(self, op: CallTool) -> dict[str, Any]:
        """The environment's own episode tool ``op.name``."""
        return self.inner.call_tool(op)

    def legal_actions(self, op: LegalActions) -> dict[str, Any]:
        """The actions legal now (every action where nothing narrows them)."""
        return self.inner.legal_actions(op)

    def summary(self, op: Summary) -> dict[str, Any]:
        """The episode so far: steps, returns, trajectory scores, its recording."""
        return self.inner.summary(op)

    def frame(self, op: Frame) -> bytes | None:
        """The current frame as PNG at the env's size, for a watcher (``None``: none yet)."""
        return self.inner.frame(op)

    def close(self, op: Close) -> None:
        """End the episode and free the environment."""
        self.inner.close(op)


class Layer(Passing):
    """One concern of the pipeline around ``inner``; every operation it does not
    override passes straight through (Gymnasium's ``Wrapper`` manner). Each method
    gets its operation (:mod:`.ops`) whole.

    Args:
        inner: the next layer in (ending at :class:`~.core.EnvCore`).
    """

    def reset(self, op: Reset) -> Moment:
        """Start an episode."""
        return self.inner.reset(op)

    def step(self, op: Step, action: Any) -> Moment:
        """One step of ``op`` with ``action``: the wire's above
        :class:`~.mask.ActionMask`, the environment's (parsed) below it."""
        return self.inner.step(op, action)

    def look(self, op: Look) -> Moment:
        """The episode as it is (the ``state`` tool), the env's state fields in ``info``."""
        return self.inner.look(op)

    def restore(self, op: Restore) -> Moment:
        """Continue from a snapshot."""
        return self.inner.restore(op)
