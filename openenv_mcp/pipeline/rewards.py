"""Served rewards (:mod:`openenv_mcp.rewards`): each step's composed reward and its
breakdown, the episode's return, and the trajectory rewards' scores at its end."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from openenv_mcp.pipeline.base import Layer, Moment, SavedEpisode
from openenv_mcp.rewards import RewardSet, Step

if TYPE_CHECKING:
    from openenv_mcp.pipeline import ops

__all__ = ["ServedRewards"]


class ServedRewards(Layer):
    """Keeps the episode's return; with served rewards, composes each step's reward.

    Args:
        inner: the next layer in.
        rewards: the rewards served with the env (``None`` or empty: its own reward).
    """

    def __init__(self, inner: Layer, rewards: RewardSet | None) -> None:
        super().__init__(inner)
        self.rewards = rewards if rewards else None
        #: The episode's steps, for trajectory rewards (observations only if one reads them).
        self.trajectory: list[Step] = []

    def reset(self, op: ops.Reset) -> Moment:
        moment = self.inner.reset(op)
        self.episode.episode_return = 0.0
        self.episode.scored = None
        self.trajectory = []
        return moment

    def step(self, op: ops.Step, action: Any) -> Moment:
        moment = self.inner.step(op, action)
        rewards = self.rewards
        if rewards is not None:
            step = Step(
                self.episode.step,
                moment.action,
                moment.observation,
                moment.env_reward,
                moment.terminated,
                moment.truncated,
                moment.info,
            )
            moment.reward, moment.breakdown = rewards.evaluate(step)
            if rewards.trajectory:
                kept = (
                    step
                    if rewards.keep_observations
                    else dataclasses.replace(step, observation=None)
                )
                self.trajectory.append(kept)
        self.episode.episode_return += moment.reward
        if moment.ended and rewards is not None and rewards.trajectory:
            moment.trajectory = self.episode.scored = rewards.end(self.trajectory)
        return moment

    def snapshot(self, op: ops.Snapshot) -> SavedEpisode:
        return dataclasses.replace(self.inner.snapshot(op), trajectory=tuple(self.trajectory))

    def restore(self, op: ops.Restore) -> Moment:
        moment = self.inner.restore(op)
        saved = op.saved
        self.episode.episode_return = saved.episode_return
        self.episode.scored = None
        self.trajectory = list(saved.trajectory)
        return moment
