"""The gymnasium env's task sets: seed splits per id, success from the id's reward
threshold (or its goal, or no rule), played over MCP (in memory) with real Gymnasium."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending, Task
from openenv_mcp_envs.gymnasium import GymnasiumConfig, GymnasiumEnv
from openenv_mcp_envs.gymnasium._tasks import GymnasiumTasks, gymnasium_tasks

pytestmark = pytest.mark.anyio


def cartpole(**options: Any) -> MCPEnvClient:
    return MCPEnvClient(build_server("gymnasium", id="CartPole-v1", render=False, **options))


def ending(env_return: float, *, terminated: bool = True) -> Ending:
    return Ending(env_return, env_return, 10, terminated, not terminated)


def balance(observation: Any) -> int:
    """Push the cart toward where the pole falls (reaches 500 steps on CartPole-v1)."""
    return 1 if observation[2] + 0.5 * observation[3] > 0 else 0


def test_cartpole_lists_three_disjoint_seed_splits() -> None:
    env = GymnasiumEnv(GymnasiumConfig(id="CartPole-v1", render=False))
    tasks = env.task_set()
    assert [(s.name, s.type) for s in tasks.splits()] == [
        ("train", "train"),
        ("validation", "validation"),
        ("test", "test"),
    ]
    assert tasks.check() == []
    seeds = {
        split.name: {t.seed for t in tasks.split_tasks(split.name)} for split in tasks.splits()
    }
    assert not seeds["train"] & seeds["validation"]
    assert not seeds["validation"] & seeds["test"]
    assert not seeds["train"] & seeds["test"]
    task = tasks.task("test", 7)
    assert task.id == "CartPole-v1-test-0007"
    assert tasks.locate("CartPole-v1-test-0007") == ("test", 7, task)
    assert env.task_set() is tasks  # built once per id
    env.close()


def test_success_is_the_reward_threshold_where_the_id_has_one() -> None:
    tasks = gymnasium_tasks("CartPole-v1", 475.0)
    task = tasks.task("test", 0)
    assert tasks.success(task, ending(475.0, terminated=False))
    assert not tasks.success(task, ending(474.0))
    assert "475" in tasks.rule
    # The served return with composed rewards does not move the bar: the env's own does.
    assert not tasks.success(task, Ending(600.0, 12.0, 12, True, False))


def test_ids_without_a_threshold_use_their_goal_or_no_rule() -> None:
    blackjack = gymnasium_tasks("Blackjack-v1", None)
    task = blackjack.task("test", 0)
    assert blackjack.success(task, ending(1.0))
    assert blackjack.success(task, ending(1.5))  # a natural
    assert not blackjack.success(task, ending(0.0))  # a draw
    assert not blackjack.success(task, ending(-1.0))
    cliff = gymnasium_tasks("CliffWalking-v1", None)
    assert cliff.success(cliff.task("test", 0), ending(-13.0))
    assert not cliff.success(cliff.task("test", 0), ending(-13.0, terminated=False))
    pendulum = GymnasiumTasks("Pendulum-v1", None)
    assert not pendulum.success(pendulum.task("test", 0), ending(-0.1))
    assert not pendulum.success(pendulum.task("test", 0), ending(10.0, terminated=False))
    assert pendulum.rule.startswith("none")
    for tasks in (blackjack, cliff, pendulum):
        verdict = tasks.success(tasks.task("train", 1), ending(1.0))
        assert isinstance(verdict, bool)


def test_ids_with_characters_a_task_id_cannot_hold_still_make_valid_ids() -> None:
    for env_id in ("ALE/Pong-v5", "my_pkg.envs:Maze-v0", "_Private Env-v1"):
        tasks = GymnasiumTasks(env_id, None)
        assert tasks.check() == []
        task = tasks.task("validation", 3)
        assert tasks.locate(task.id) == ("validation", 3, task)


def test_frozen_lake_threshold_judges_a_played_episode() -> None:
    env = GymnasiumEnv(GymnasiumConfig(id="FrozenLake-v1", render=False))
    tasks = env.task_set()
    assert tasks.reward_threshold == pytest.approx(0.7)  # type: ignore[attr-defined]
    assert tasks.success(tasks.task("test", 0), ending(1.0))
    assert not tasks.success(tasks.task("test", 0), ending(0.0))
    env.close()


async def test_the_splits_travel_in_the_spec_and_a_task_starts_the_same_twice() -> None:
    with anyio.fail_after(60):
        async with cartpole() as env:
            assert env.splits == [
                {"name": "train", "type": "train", "tasks": 1000},
                {"name": "validation", "type": "validation", "tasks": 100},
                {"name": "test", "type": "test", "tasks": 100},
            ]
            first, info = await env.reset(options={"split": "test", "index": 7})
            assert info["task"] == {
                "id": "CartPole-v1-test-0007",
                "split": "test",
                "index": 7,
                "group": "CartPole-v1",
            }
            again, info = await env.reset(options={"task": "CartPole-v1-test-0007"})
            assert info["task"]["index"] == 7
            np.testing.assert_array_equal(first, again)
            # ... and it is the seed's first observation, as gymnasium.make gives it.
            seeded, _ = await env.reset(seed=2_000_007)
            np.testing.assert_array_equal(first, seeded)
            other, _ = await env.reset(options={"split": "test", "index": 8})
            assert not np.array_equal(first, other)


async def test_success_is_judged_at_the_end_of_a_played_episode() -> None:
    with anyio.fail_after(60):
        async with cartpole() as env:
            # Always pushing right drops the pole in a few dozen steps: a failure.
            obs, info = await env.reset(options={"split": "validation", "index": 0})
            assert "success" not in info["task"]
            steps = 0
            while True:
                obs, _, terminated, truncated, info = await env.step(1)
                steps += 1
                if terminated or truncated:
                    break
                assert "success" not in info.get("task", {})
            assert terminated and steps < 100
            assert info["task"]["success"] is False
            # A controller that balances it holds 500 steps (return 500 >= 475).
            obs, info = await env.reset(options={"split": "test", "index": 3})
            steps = 0
            while True:
                obs, _, terminated, truncated, info = await env.step(balance(obs))
                steps += 1
                if terminated or truncated:
                    break
            assert truncated and not terminated and steps == 500
            assert info["task"]["success"] is True
            assert info["task"]["id"] == "CartPole-v1-test-0003"


async def test_bad_task_references_are_clear_errors_and_the_server_goes_on() -> None:
    with anyio.fail_after(60):
        async with cartpole() as env:
            cases: list[tuple[dict[str, Any], type[Exception], str]] = [
                ({"split": "tset", "index": 0}, UnknownTask, "Did you mean 'test'"),
                ({"split": "test", "index": 100}, UnknownTask, "has 100 tasks (indices 0-99)"),
                ({"split": "test", "index": -1}, UnknownTask, "got index -1"),
                ({"split": "train", "index": 10**12}, UnknownTask, "has 1000 tasks"),
                ({"task": "CartPole-v1-test-0100"}, UnknownTask, "CartPole-v1-SPLIT-NNNN"),
                ({"task": "pong-m0-d0-test-0001"}, UnknownTask, "no task 'pong-m0-d0-test-0001'"),
                ({"task": "Acrobot-v1-test-0001"}, UnknownTask, "CartPole-v1-SPLIT-NNNN"),
                ({"task": "CartPole-v1-test-7"}, UnknownTask, "no task"),
                ({"split": "test"}, ArgumentError, "needs both 'split'"),
                ({"split": "test", "index": "7"}, UnknownTask, "index must be an integer"),
                ({"task": 7}, ArgumentError, "must be a task id"),
            ]
            for options, kind, words in cases:
                with pytest.raises(kind) as raised:
                    await env.reset(options=options)
                assert words in str(raised.value), (options, str(raised.value))
            with pytest.raises(ArgumentError, match="starts from seed 2000001"):
                await env.reset(seed=5, options={"split": "test", "index": 1})
            _, info = await env.reset(options={"split": "test", "index": 1})
            assert info["task"]["id"] == "CartPole-v1-test-0001"


def test_a_task_set_reads_back_from_its_json() -> None:
    task = gymnasium_tasks("CartPole-v1", 475.0).task("train", 12)
    assert Task.from_json(task.to_json()) == task


async def test_a_goal_env_without_a_threshold_is_judged_by_its_goal_over_mcp() -> None:
    with anyio.fail_after(60):
        async with MCPEnvClient(build_server("gymnasium", id="Blackjack-v1", render=False)) as env:
            outcomes = []
            for index in range(6):
                _, info = await env.reset(options={"split": "test", "index": index})
                _, reward, terminated, _, info = await env.step(0)  # stick: the hand ends
                assert terminated
                assert info["task"]["success"] is (reward > 0)
                outcomes.append(info["task"]["success"])
            # The same tasks again: the same hands, the same verdicts.
            for index, outcome in enumerate(outcomes):
                await env.reset(options={"split": "test", "index": index})
                _, _, _, _, info = await env.step(0)
                assert info["task"]["success"] is outcome
