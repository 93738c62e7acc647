"""Rewards the tests serve by reference (``--reward tests.rewards_for_tests:...``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from openenv_mcp.rewards import Discounted, EnvReward, Judge, Step, WeightedSum, reward
from openenv_mcp.rewards import trajectory_reward as trajectory


@reward
def polite(step: Step) -> float:
    """1 if the message says please."""
    return 1.0 if "please" in str(step.action) else 0.0


@reward
def short(step: Step) -> float:
    return 1.0 if len(str(step.action)) <= 10 else 0.0


#: The echo env's reward halved, plus politeness and brevity.
echo = WeightedSum([EnvReward(scale=0.5), polite, short], weights=[1.0, 2.0, 0.5], name="total")


@trajectory(credit=Discounted(0.5))
def said_bye(steps: Sequence[Step]) -> float:
    return 10.0 if steps and steps[-1].action == "bye" else 0.0


@trajectory(name="words", keep_observations=True)
def words(steps: Sequence[Step]) -> float:
    return float(sum(len(str(s.observation).split()) for s in steps))


echo_with_trajectory = [echo, said_bye, words]


async def _length_judge(step: Step) -> float:
    await asyncio.sleep(0)  # a real judge awaits a model; this one a local rule
    if "slow" in str(step.action):
        await asyncio.sleep(30)
    if "boom" in str(step.action):
        raise RuntimeError("the judge could not score this")
    return len(str(step.action)) / 10


judge = Judge(_length_judge, timeout=0.5, name="length_judge")


@reward
def broken(step: Step) -> float:
    raise ValueError("no score for you")


def not_a_reward() -> object:
    return 42
