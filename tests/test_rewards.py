"""Composable rewards: the containers, credit, judges, and the breakdown over MCP."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import Client

from openenv_mcp import MCPEnvClient
from openenv_mcp.errors import ArgumentError, RewardFailed
from openenv_mcp.rewards import (
    Discounted,
    EnvReward,
    Gate,
    LastStep,
    RewardSet,
    Sequential,
    Step,
    WeightedSum,
    load_rewards,
    reward,
)
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp_envs.echo import EchoEnv
from tests import rewards_for_tests as examples


def a_step(action: Any = "hi", env_reward: float = 1.0, **kw: Any) -> Step:
    return Step(1, action, None, env_reward, kw.get("terminated", False), False, {})


def value(r: Any, step: Step) -> tuple[float, dict[str, float]]:
    breakdown: dict[str, float] = {}
    return r.evaluate(step, breakdown), breakdown


def test_containers_compose_and_report_each_part() -> None:
    one = reward(lambda s: 1.0, name="one")
    zero = reward(lambda s: 0.0, name="zero")
    total, parts = value(WeightedSum([one, EnvReward(scale=3)], weights=[2, 1]), a_step())
    assert total == 5.0 and parts == {"one": 1.0, "env_reward": 3.0, "weighted_sum": 5.0}
    assert value(Gate(EnvReward(), threshold=2.0), a_step())[0] == 0.0
    assert value(Gate(EnvReward(), threshold=0.5), a_step())[0] == 1.0
    total, parts = value(Sequential(one, zero, EnvReward(scale=7)), a_step())
    assert total == 0.0 and "env_reward" not in parts  # fail-fast: later parts not run
    assert value(Sequential(one, EnvReward(scale=7)), a_step())[0] == 7.0
    assert value(EnvReward(clip=1.0), a_step(env_reward=-5))[0] == -1.0


def test_credit_back_to_steps() -> None:
    assert LastStep()(3.0, 3) == [0.0, 0.0, 3.0]
    assert Discounted(0.5)(8.0, 3) == [2.0, 4.0, 8.0]
    with pytest.raises(ArgumentError, match="gamma"):
        Discounted(1.5)


def test_bad_rewards_are_refused_clearly() -> None:
    with pytest.raises(ArgumentError, match="unique"):
        RewardSet([examples.polite, examples.polite])
    with pytest.raises(ArgumentError, match=r"package\.module:name"):
        load_rewards(["no_colon"])
    with pytest.raises(ArgumentError, match="nothing_here"):
        load_rewards(["tests.rewards_for_tests:nothing_here"])
    with pytest.raises(ArgumentError, match="is a int; expected a Reward"):
        load_rewards(["tests.rewards_for_tests:not_a_reward"])
    with pytest.raises(ArgumentError, match="async function"):
        from openenv_mcp.rewards import Judge

        Judge(lambda s: 1.0)  # type: ignore[arg-type, return-value]


def test_a_judge_awaits_its_scorer_under_a_timeout() -> None:
    rewards = RewardSet([examples.judge])
    assert rewards.is_async
    assert rewards.evaluate(a_step("abcde"))[0] == 0.5
    with pytest.raises(RewardFailed, match=r"'length_judge' .* within 0.5s"):
        rewards.evaluate(a_step("slow"))
    with pytest.raises(RewardFailed, match="RuntimeError"):
        rewards.evaluate(a_step("boom"))


pytestmark = pytest.mark.anyio


def echo_server(*refs: str, **settings: Any) -> Any:
    return build_server("echo", settings=ServerSettings(reward=list(refs), **settings))


async def test_each_step_carries_its_breakdown_and_the_end_its_trajectory() -> None:
    with anyio.fail_after(60):
        async with Client(echo_server("tests.rewards_for_tests:echo_with_trajectory")) as c:
            await c.call_tool("reset", {"seed": 0})
            view = (await c.call_tool("step", {"action": "hi please"})).structured_content
            # env: 0.1 x 9 chars; total = 0.5 x env + 2 x polite + 0.5 x short
            assert view["rewards"] == pytest.approx(
                {"env": 0.9, "env_reward": 0.45, "polite": 1.0, "short": 1.0, "total": 2.95}
            )
            assert view["reward"] == pytest.approx(2.95) and "trajectory" not in view
            end = (await c.call_tool("step", {"action": "bye"})).structured_content
            assert end["status"] == "ended"
            assert end["trajectory"]["scores"] == {"said_bye": 10.0, "words": 3.0}
            assert end["trajectory"]["credit"]["said_bye"] == [5.0, 10.0]
            assert end["trajectory"]["credit"]["words"] == [0.0, 3.0]
            summary = (await c.call_tool("episode_summary", {})).structured_content
            assert summary["trajectory"] == end["trajectory"]
            assert summary["env_return"] == pytest.approx(0.9 + 0.3)
            assert summary["episode_return"] == pytest.approx(end["episode_return"])


async def test_a_failing_reward_breaks_only_its_episode_and_says_why() -> None:
    with anyio.fail_after(60):
        server = echo_server("tests.rewards_for_tests:judge")
        async with Client(server) as c:
            first = (await c.call_tool("reset", {"seed": 0})).structured_content["episode_id"]
            other = (await c.call_tool("reset", {"new_episode": True})).structured_content
            failed = await c.call_tool(
                "step", {"action": "slow", "episode_id": first}, raise_on_error=False
            )
            assert failed.is_error and failed.content[0].text.startswith("RewardFailed: ")
            assert "'length_judge' (a judge) gave no score within 0.5s" in failed.content[0].text
            assert "call reset" in failed.content[0].text
            fine = await c.call_tool("step", {"action": "abc", "episode_id": other["episode_id"]})
            assert fine.structured_content["rewards"]["length_judge"] == pytest.approx(0.3)
            again = await c.call_tool(
                "step", {"action": "abc", "episode_id": first}, raise_on_error=False
            )
            assert again.is_error and "broken" in again.content[0].text
            await c.call_tool("reset", {"episode_id": first})  # reset makes it whole again
            ok = await c.call_tool("step", {"action": "abcd", "episode_id": first})
            assert ok.structured_content["reward"] == pytest.approx(0.4)


async def test_a_reward_that_raises_names_itself() -> None:
    with anyio.fail_after(60):
        async with Client(echo_server("tests.rewards_for_tests:broken")) as c:
            await c.call_tool("reset", {})
            failed = await c.call_tool("step", {"action": "x"}, raise_on_error=False)
            assert "reward 'broken' raised ValueError at step 1: no score for you" in (
                failed.content[0].text
            )


def test_a_bad_reference_fails_at_start() -> None:
    with pytest.raises(ArgumentError, match="nope"):
        echo_server("tests.rewards_for_tests:nope")


async def test_the_client_and_its_adapters_keep_the_breakdown() -> None:
    with anyio.fail_after(60):
        server = echo_server("tests.rewards_for_tests:echo_with_trajectory")
        async with MCPEnvClient(server) as env:
            await env.reset(seed=0)
            _, r, _, _, info = await env.step("please")
            assert info["rewards"]["polite"] == 1.0 and r == info["reward"]
            *_, info = await env.step("bye")
            assert info["trajectory"]["scores"]["said_bye"] == 10.0


def test_the_gymnasium_and_vector_adapters_keep_the_breakdown() -> None:
    from openenv_mcp.client import MCPGymEnv, MCPVectorEnv

    env = MCPGymEnv(echo_server("tests.rewards_for_tests:echo_with_trajectory"))
    try:
        env.reset(seed=0)
        _, reward, _, _, info = env.step("please")
        assert info["rewards"]["polite"] == 1.0 and reward == pytest.approx(info["reward"])
        *_, info = env.step("bye")
        assert info["trajectory"]["credit"]["said_bye"] == [5.0, 10.0]
    finally:
        env.close()
    envs = MCPVectorEnv(echo_server("tests.rewards_for_tests:echo"), num_envs=2)
    try:
        envs.reset(seed=0)
        _, rewards, _, _, infos = envs.step(np.array(["please", "no"], dtype=object))
        assert list(infos["rewards"]["polite"]) == [1.0, 0.0]
        assert rewards == pytest.approx(infos["rewards"]["total"])
    finally:
        envs.close()


class PoliteEcho(EchoEnv):
    """An env that brings its own composed reward (no --reward needed)."""

    name = "polite_echo"
    serving = dataclasses.replace(
        EchoEnv.serving, rewards=(WeightedSum([EnvReward(), examples.polite], name="own"),)
    )


async def test_an_env_can_bring_its_own_rewards_and_agents_see_them() -> None:
    with anyio.fail_after(60):
        async with Client(build_server(PoliteEcho)) as c:
            await c.call_tool("reset", {})
            view = (await c.call_tool("step", {"action": "please"})).structured_content
            assert (
                view["rewards"]["own"] == pytest.approx(1.6)
                and view["reward"] == view["rewards"]["own"]
            )
        agent = build_server(PoliteEcho, settings=ServerSettings(profile="agent"))
        async with Client(agent) as c:
            assert "episode_summary" in {t.name for t in await c.list_tools()}
            await c.call_tool("reset", {})
            text = (await c.call_tool("step", {"action": "please"})).content[0].text
            assert "reward +1.6" in text
            summary = await c.call_tool("episode_summary", {})
            assert '"env_return":0.6' in summary.content[0].text.replace(" ", "")
