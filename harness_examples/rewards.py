"""Composed rewards to serve with any environment: ``--reward harness_examples.rewards:breakout``.

Run from the repository's root (the current directory is importable for ``--reward``).
"""

from __future__ import annotations

from collections.abc import Sequence

from openenv_mcp.rewards import (
    Discounted,
    EnvReward,
    Gate,
    Step,
    WeightedSum,
    reward,
    trajectory_reward,
)


@reward
def alive(step: Step) -> float:
    """A small bonus for every step the game goes on."""
    return 0.0 if step.terminated else 0.01


@reward
def served(step: Step) -> float:
    """1 for pressing FIRE (Breakout's launch: action 1), else 0."""
    return 1.0 if int(step.action) == 1 else 0.0


#: Breakout, shaped: the points clipped to [-1, 1] (as DQN trains), a bonus for staying
#: alive, and a bonus for launching the ball that counts only where FIRE was pressed.
breakout = WeightedSum(
    [EnvReward(clip=1.0, name="points"), alive, Gate(served, threshold=1.0, name="launch")],
    weights=[1.0, 1.0, 0.1],
    name="shaped",
)


@trajectory_reward(credit=Discounted(0.99))
def cleared(steps: Sequence[Step]) -> float:
    """At the episode's end: the points of the whole game, credited back with gamma 0.99."""
    return float(sum(s.reward for s in steps))


#: Both: the shaped step reward and the trajectory reward, for ``--reward``.
breakout_with_trajectory = [breakout, cleared]
