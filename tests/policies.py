"""Policies the collect tests name by reference (``--policy tests.policies:...``)."""

from __future__ import annotations

from typing import Any


async def say_bye_soon(observation: Any, info: dict[str, Any]) -> str:
    """An async policy: two messages, then "bye" (the echo env's end)."""
    return "bye" if info["step"] >= 2 else f"message {info['step']}"


#: The share of a noisy balancer's steps that are random (about half its CartPole-v1
#: runs then reach the 475 the task set asks, so samples of one task differ).
EPSILON = 0.2


def noisy_balancer(observation: Any, info: dict[str, Any]) -> int:
    """CartPole: push toward where the pole is falling (angle plus half its angular
    velocity), but with probability :data:`EPSILON` a random push, drawn from the eval
    run's own seed (``info["eval"]["seed"]``) and the step, so a run replays exactly."""
    import random

    run = info.get("eval", {}).get("seed", 0)
    draw = random.Random(f"{run}:{info['step']}")
    if draw.random() < EPSILON:
        return draw.randrange(2)
    return 1 if float(observation[2]) + 0.5 * float(observation[3]) > 0 else 0


def balancer(observation: Any, info: dict[str, Any]) -> int:
    """CartPole without noise: succeeds on every task."""
    return 1 if float(observation[2]) + 0.5 * float(observation[3]) > 0 else 0


def failing_balancer(observation: Any, info: dict[str, Any]) -> int:
    """Always pushes left: the pole falls within a few dozen steps, every task fails."""
    return 0


def raises(observation: Any, info: dict[str, Any]) -> int:
    """A policy with a bug: it raises on its third step."""
    if info["step"] >= 2:
        raise ValueError("the policy's bug")
    return 0


def illegal(observation: Any, info: dict[str, Any]) -> int:
    """Chooses an action CartPole does not have."""
    return 7
