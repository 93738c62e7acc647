"""The gymnasium env's tasks: seeds of the served id, judged by Gymnasium's own bar.

Every id gets the same three splits of disjoint seeds (:class:`SeedTasks`: train from
seed 0, validation from 1,000,000, test from 2,000,000) and ids that carry the env id
(``CartPole-v1-test-0007``). Success is, in order of preference:

1. the id's registered ``reward_threshold`` (``EnvSpec.reward_threshold``, Gymnasium's
   "solved" bar: CartPole-v1 475, FrozenLake-v1 0.70, LunarLander-v3 200): the episode's
   return of the environment's own rewards reaches it;
2. for the ids that have no threshold but a goal, that goal (:data:`GOALS`: Blackjack's
   hand won, CliffWalking's goal reached);
3. otherwise no rule: success is always ``False`` and the return is what to read
   (Pendulum-v1 and the MuJoCo walkers have no bar; a fall ends Walker2d, so "ended"
   cannot mean "succeeded").

The return judged is the environment's own (:attr:`Ending.env_return`), so rewards the
server composes on top do not move the bar. A config that truncates earlier than the
id does (``max_episode_steps``) can make the bar unreachable; the rule stays the id's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from openenv_mcp.tasks import Ending, SeedTasks

__all__ = ["GOALS", "GymnasiumTasks", "gymnasium_tasks"]

#: Goals of ids without a reward threshold: what success means, and the rule.
GOALS: dict[str, tuple[str, Callable[[Ending], bool]]] = {
    "Blackjack-v1": (
        "the hand is won: the episode terminated with a positive return",
        lambda e: e.terminated and e.env_return > 0,
    ),
    "CliffWalking-v1": (
        "the goal is reached: the episode terminated (falling off the cliff does not end it)",
        lambda e: e.terminated,
    ),
    "CliffWalkingSlippery-v1": (
        "the goal is reached: the episode terminated (falling off the cliff does not end it)",
        lambda e: e.terminated,
    ),
}

# The characters a task id may hold besides letters and digits (openenv_mcp.tasks).
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_.:/@+=-]")


def _prefix(env_id: str) -> str:
    """``env_id`` as a task id prefix: characters an id cannot hold become ``_``."""
    prefix = _NOT_IN_ID.sub("_", env_id)[:180]
    return prefix if prefix[:1].isalnum() else f"gym{prefix}"


class GymnasiumTasks(SeedTasks):
    """Seeds of one Gymnasium id, judged by its reward threshold, its goal, or nothing.

    Args:
        env_id: the Gymnasium id (``"CartPole-v1"``); the task ids' prefix.
        reward_threshold: the id's registered threshold, or ``None``.

    Attributes:
        rule: what success means for this id, in words.
    """

    def __init__(self, env_id: str, reward_threshold: float | None) -> None:
        self.env_id = env_id
        self.reward_threshold = reward_threshold
        success: Callable[[Ending], bool]
        if reward_threshold is not None:
            bar = float(reward_threshold)
            self.rule = f"the return reaches the id's reward threshold ({bar:g})"

            def success(ending: Ending) -> bool:
                return ending.env_return >= bar

        elif env_id in GOALS:
            self.rule, success = GOALS[env_id]
        else:
            self.rule = "none: the id has no reward threshold or goal; success is always False"

            def success(ending: Ending) -> bool:
                return False

        super().__init__(_prefix(env_id), success, group=env_id)


@functools.lru_cache(maxsize=64)
def gymnasium_tasks(env_id: str, reward_threshold: float | None) -> GymnasiumTasks:
    """The task set of ``env_id`` (one per id and threshold, built once)."""
    return GymnasiumTasks(env_id, reward_threshold)
