"""ServedRewards alone: the return, composed rewards and their breakdown, trajectory
scores at the end, and snapshots that carry them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.mask import ActionMask
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp.rewards import LastStep, RewardSet, Step, reward, trajectory_reward
from openenv_mcp_envs.echo import EchoEnv
from tests.pipeline._calls import reset, restore, snapshot, step


@reward(name="shout")
def shout(step: Step) -> float:
    return 1.0 if str(step.action).isupper() else 0.0


@trajectory_reward(name="length", credit=LastStep())
def length(steps: Sequence[Step]) -> float:
    return float(len(steps))


def _served(rewards: RewardSet | None, **config: object) -> ServedRewards:
    core = EnvCore(EchoEnv(EchoEnv.Config(**config)), "ep_r")
    return ServedRewards(ActionMask(core), rewards)


def test_without_served_rewards_the_envs_own_is_the_return() -> None:
    layer = _served(None)
    reset(layer, 0)
    moment = step(layer, "abc")
    assert moment.reward == pytest.approx(0.3) and moment.breakdown is None
    assert layer.episode.episode_return == pytest.approx(0.3)


def test_composed_rewards_break_down_and_score_the_trajectory_at_the_end() -> None:
    layer = _served(RewardSet([shout, length]), max_steps=2)
    reset(layer, 0)
    first = step(layer, "HEY")
    assert first.reward == 1.0 and first.breakdown == {"env": pytest.approx(0.3), "shout": 1.0}
    saved = snapshot(layer)
    last = step(layer, "bye")
    assert last.terminated and last.trajectory == {
        "scores": {"length": 2.0},
        "credit": {"length": [0.0, 2.0]},
    }
    assert layer.episode.scored == last.trajectory
    restore(layer, saved)  # the trajectory so far comes back with the snapshot
    assert layer.episode.episode_return == 1.0 and layer.episode.scored is None
    assert step(layer, "bye").trajectory == last.trajectory
