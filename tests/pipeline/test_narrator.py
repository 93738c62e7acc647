"""The Narrator alone: a step's events in words."""

from __future__ import annotations

from typing import Any

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narration
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.narrator import Narrator, lost_a_life
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp_envs.echo import EchoEnv
from tests.pipeline._calls import reset, step


class LoudNarration(Narration[EchoEnv]):
    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        if result.observation == "boom":
            raise RuntimeError("a describer that breaks")
        return [f"You said {result.observation!r}"]


class LoudEcho(EchoEnv):
    narration = LoudNarration


def test_events_come_from_the_env_and_the_server_and_a_broken_describer_breaks_nothing() -> None:
    layer = Narrator(ServedRewards(EnvCore(LoudEcho(EchoEnv.Config(max_steps=2)), "ep_n"), None))
    reset(layer, 0)
    assert step(layer, "hi").events == ["You said 'hi'"]
    assert step(layer, "boom").events == ["The episode was cut short (truncated at step 2)"]


def test_a_life_lost_is_seen_from_infos() -> None:
    assert lost_a_life({"lives": 3}, {"lives": 2})
    assert not lost_a_life({"lives": 3}, {"lives": 3}) and not lost_a_life({}, {"lives": 1})
