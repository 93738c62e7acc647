"""Repeat alone: sums, events that say when, where it stops, and the call's reward."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ArgumentError, InvalidAction
from openenv_mcp.pipeline import MAX_REPEAT
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.mask import ActionMask
from openenv_mcp.pipeline.narrator import Narrator
from openenv_mcp.pipeline.order import OrderEnforcing
from openenv_mcp.pipeline.repeat import Repeat
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp_envs.echo import EchoEnv
from tests.door_env import DoorConfig, DoorEnv
from tests.pipeline._calls import reset, step


def _repeat(core: EnvCore) -> Repeat:
    return Repeat(Narrator(ServedRewards(OrderEnforcing(ActionMask(core)), None)))


def test_it_sums_and_stops_where_the_episode_ends() -> None:
    layer = _repeat(EnvCore(EchoEnv(EchoEnv.Config(max_steps=3)), "ep_rep"))
    reset(layer, 0)
    moment = step(layer, "ab", 8)
    assert moment.taken == 3 and moment.truncated
    assert moment.reward == pytest.approx(0.6) and layer.episode.step == 3
    assert layer.episode.reward == pytest.approx(0.6)  # the call's, all its steps'
    assert moment.events == ["The episode was cut short (truncated at step 3)"]


def test_an_action_that_turns_illegal_stops_it_and_says_why() -> None:
    layer = _repeat(EnvCore(DoorEnv(DoorConfig()), "ep_door"))
    reset(layer)
    with pytest.raises(InvalidAction):
        step(layer, "OPEN", 3)  # illegal at once: refused, nothing taken
    step(layer, "UNLOCK")
    moment = step(layer, "OPEN", 3)  # opens (ends) on the first
    assert moment.taken == 1 and moment.terminated


def test_repeat_is_bounded() -> None:
    layer = _repeat(EnvCore(EchoEnv(EchoEnv.Config(max_steps=3)), "ep_rep"))
    reset(layer, 0)
    for bad in (0, MAX_REPEAT + 1):
        with pytest.raises(ArgumentError, match=f"repeat must be 1..{MAX_REPEAT}, got {bad}"):
            step(layer, "x", bad)
    assert layer.episode.step == 0
