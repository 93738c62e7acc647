"""Policies for `openenv-mcp eval gymnasium --id CartPole-v1 --policy FILE.py:NAME`.

A policy is any function ``(observation, info) -> action``; ``info["eval"]`` names the
run (its task, sample and a seed of its own), so a stochastic policy can replay exactly.
"""

from __future__ import annotations

import random
from typing import Any


def balance(observation: Any, info: dict[str, Any]) -> int:
    """Push toward where the pole is falling: its angle plus half its angular velocity."""
    return 1 if float(observation[2]) + 0.5 * float(observation[3]) > 0 else 0


def noisy_balance(observation: Any, info: dict[str, Any]) -> int:
    """:func:`balance`, but one step in five a random push, drawn from the run's seed."""
    draw = random.Random(f"{info['eval']['seed']}:{info['step']}")
    if draw.random() < 0.2:
        return draw.randrange(2)
    return balance(observation, info)
