"""The Narrator alone: a step's events in words and the text every answer opens with."""

from __future__ import annotations

from typing import Any

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narration
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.narrator import Narrator, lost_a_life
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp_envs.echo import EchoEnv


class LoudNarration(Narration[EchoEnv]):
    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        if result.observation == "boom":
            raise RuntimeError("a describer that breaks")
        return [f"You said {result.observation!r}"]


class LoudEcho(EchoEnv):
    narration = LoudNarration


def _narrator(env: EchoEnv) -> Narrator:
    return Narrator(ServedRewards(EnvCore(env, "ep_n"), None))


def test_events_come_from_the_env_and_the_server_and_a_broken_describer_breaks_nothing() -> None:
    layer = _narrator(LoudEcho(EchoEnv.Config(max_steps=2)))
    layer.reset(0, None)
    assert layer.step("hi").events == ["You said 'hi'"]
    assert layer.step("boom").events == ["The episode was cut short (truncated at step 2)"]
    text = layer.step_text("boom", layer.inner.look())
    assert (
        text.startswith("Step 2 (boom): reward +0, return") and "call reset to play again" in text
    )


def test_the_opening_text_names_the_episode_and_shows_the_observation() -> None:
    layer = _narrator(EchoEnv(EchoEnv.Config()))
    layer.reset(7, {"greeting": "hello"})
    text = layer.reset_text(7)
    assert text == "New episode of echo (episode ep_n, seed 7). Observation: 'hello'."


def test_a_life_lost_is_seen_from_infos() -> None:
    assert lost_a_life({"lives": 3}, {"lives": 2})
    assert not lost_a_life({"lives": 3}, {"lives": 3}) and not lost_a_life({}, {"lives": 1})
