"""The atari env's task sets: each game's modes and difficulties times seed splits, and
the human-normalized score of Atari-57, with the real emulator over MCP (in memory)."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending
from openenv_mcp_envs.atari import AtariConfig, AtariEnv, list_games
from openenv_mcp_envs.atari._tasks import (
    BASELINES,
    SEEDS_PER_VARIANT,
    AtariTasks,
    human_normalized,
)

pytestmark = pytest.mark.anyio


def pong(**options: Any) -> MCPEnvClient:
    return MCPEnvClient(build_server("atari", game="pong", **options))


def ending(env_return: float) -> Ending:
    return Ending(env_return, env_return, 100, True, False)


def test_the_baselines_cover_atari_57_by_the_ids_this_env_serves() -> None:
    assert len(BASELINES) == 57
    assert set(BASELINES) <= set(list_games())
    for game, baseline in BASELINES.items():
        assert baseline.human > baseline.random, game
    assert human_normalized("pong", -20.7) == 0.0
    assert human_normalized("pong", 14.6) == pytest.approx(1.0)
    assert human_normalized("breakout", 30.5) == pytest.approx(1.0)
    assert human_normalized("adventure", 1.0) is None  # not one of the 57


def test_pong_has_its_modes_and_difficulties_times_seeds() -> None:
    env = AtariEnv(AtariConfig(game="pong"))
    tasks = env.task_set()
    assert env.task_set() is tasks  # built once per game
    assert [s.name for s in tasks.splits()] == ["train", "validation", "test"]
    assert tasks.check() == []
    # Pong: modes (0, 1), difficulties (0, 1, 2, 3); the default is mode 0 difficulty 0.
    variants = [(0, 0), (1, 0), (0, 1), (0, 2), (0, 3)]
    assert list(tasks.variants) == variants  # type: ignore[attr-defined]
    for split, per in SEEDS_PER_VARIANT.items():
        assert len(tasks.split_tasks(split)) == len(variants) * per
    task = tasks.task("test", 27)
    assert task.id == "pong-m1-d0-test-0007"
    assert task.seed == 2_000_007
    assert dict(task.options) == {"mode": 1, "difficulty": 0}
    assert task.difficulty == "mode 1 difficulty 0"
    assert task.group == "pong"
    for split in ("train", "validation", "test"):
        for index in (0, 1, len(tasks.split_tasks(split)) - 1):
            found = tasks.task(split, index)
            assert tasks.locate(found.id) == (split, index, found)
    seeds = {s: {t.seed for t in tasks.split_tasks(s)} for s in SEEDS_PER_VARIANT}
    assert not seeds["train"] & seeds["test"] and not seeds["validation"] & seeds["test"]
    env.close()


def test_a_game_whose_modes_do_not_start_at_zero_keeps_its_own() -> None:
    # Air Raid's modes are 1..8 and its only difficulty 0; Backgammon's only difficulty 3.
    air_raid = AtariTasks("air_raid", (1, 2, 3, 4, 5, 6, 7, 8), (0,))
    assert air_raid.check() == []
    assert air_raid.task("test", 0).id == "air_raid-m1-d0-test-0000"
    assert len(air_raid.split_tasks("test")) == 8 * SEEDS_PER_VARIANT["test"]
    backgammon = AtariTasks("backgammon", (0,), (3,))
    assert backgammon.task("train", 0).options == {"mode": 0, "difficulty": 3}
    assert backgammon.scores(backgammon.task("train", 0), ending(1.0)) == {}


def test_success_is_human_level_for_atari_57_and_a_positive_return_otherwise() -> None:
    tasks = AtariTasks("pong", (0, 1), (0, 1, 2, 3))
    task = tasks.task("test", 0)
    assert tasks.success(task, ending(15.0))
    assert tasks.success(task, ending(14.6))
    assert not tasks.success(task, ending(14.0))
    assert tasks.scores(task, ending(-20.7)) == {"human_normalized": 0.0}
    other = AtariTasks("adventure", (0, 1, 2), (0, 1, 2, 3))
    assert other.success(other.task("test", 0), ending(1.0))
    assert not other.success(other.task("test", 0), ending(0.0))


async def test_a_task_starts_the_same_twice_and_its_score_comes_at_the_end() -> None:
    with anyio.fail_after(60):
        async with pong(max_episode_steps=30) as env:
            assert env.splits == [
                {"name": "train", "type": "train", "tasks": 500},
                {"name": "validation", "type": "validation", "tasks": 100},
                {"name": "test", "type": "test", "tasks": 100},
            ]

            async def play(options: dict[str, Any]) -> tuple[Any, list[Any], dict[str, Any]]:
                first, info = await env.reset(options=options)
                assert "success" not in info["task"]
                assert (await env.state())[1]["mode"] == info["task"]["index"] // 20 % 2
                frames = []
                for step in range(30):
                    obs, _, terminated, truncated, info = await env.step(step % 6)
                    frames.append(obs)
                    if terminated or truncated:
                        break
                assert truncated and not terminated
                return first, frames, info

            first, frames, info = await play({"split": "test", "index": 27})
            judged = info["task"]
            assert judged["id"] == "pong-m1-d0-test-0007"
            assert judged["difficulty"] == "mode 1 difficulty 0"
            assert isinstance(judged["success"], bool) and judged["success"] is False
            expected = (info["episode_return"] + 20.7) / 35.3
            assert judged["scores"] == {"human_normalized": pytest.approx(expected)}
            again, frames_again, info_again = await play({"task": "pong-m1-d0-test-0007"})
            np.testing.assert_array_equal(first, again)
            for a, b in zip(frames, frames_again, strict=True):  # sticky actions, seeded
                np.testing.assert_array_equal(a, b)
            assert info_again["task"] == judged
            # The default variant starts Pong in mode 0 (the state says which).
            await env.reset(options={"split": "test", "index": 0})
            assert (await env.state())[1]["mode"] == 0


async def test_a_task_overrides_the_mode_the_server_was_configured_with() -> None:
    with anyio.fail_after(60):
        async with pong(mode=1) as env:
            await env.reset(options={"task": "pong-m0-d2-validation-0003"})
            _, state = await env.state()
            assert (state["mode"], state["difficulty"]) == (0, 2)
            await env.reset(options={"task": "pong-m1-d0-validation-0003"})
            _, state = await env.state()
            assert (state["mode"], state["difficulty"]) == (1, 0)


async def test_bad_task_references_are_clear_errors_and_the_server_goes_on() -> None:
    with anyio.fail_after(60):
        async with pong() as env:
            cases: list[tuple[dict[str, Any], type[Exception], str]] = [
                ({"split": "tests", "index": 0}, UnknownTask, "Did you mean 'test'"),
                ({"split": "test", "index": -1}, UnknownTask, "has 100 tasks (indices 0-99)"),
                ({"split": "test", "index": 100}, UnknownTask, "got index 100"),
                ({"task": "CartPole-v1-test-0007"}, UnknownTask, "pong-mMODE-dDIFFICULTY"),
                ({"task": "breakout-m0-d0-test-0001"}, UnknownTask, "5 variants"),
                ({"task": "pong-m2-d0-test-0001"}, UnknownTask, "m0-d0, m1-d0"),
                ({"task": "pong-m1-d1-test-0001"}, UnknownTask, "no task"),  # not a variant
                ({"task": "pong-m0-d0-test-0020"}, UnknownTask, "test seeds 0000-0019"),
                ({"task": "pong-m0-d0-test-00001"}, UnknownTask, "no task"),
                ({"task": "pong-m0-d0-tests-0001"}, UnknownTask, "no task"),
                ({"task": "x" * 500}, UnknownTask, "no task"),
                ({"task": "pong-m0-d0-test-0001", "mode": 1}, ArgumentError, "sets option 'mode'"),
            ]
            for options, kind, words in cases:
                with pytest.raises(kind) as raised:
                    await env.reset(options=options)
                assert words in str(raised.value), (options, str(raised.value))
            _, info = await env.reset(options={"task": "pong-m0-d0-test-0001", "mode": 0})
            assert info["task"]["index"] == 1


@pytest.mark.parametrize("game", ["air_raid", "basic_math", "centipede", "pooyan", "pong"])
def test_the_default_variant_is_what_the_rom_starts_in(game: str) -> None:
    env = AtariEnv(AtariConfig(game=game))
    env.reset(seed=0)
    tasks = env.task_set()
    assert tasks.variants[0] == (env.emu.mode, env.emu.difficulty)  # type: ignore[attr-defined]
    env.close()


def test_the_game_with_most_modes_stays_in_the_thousands() -> None:
    env = AtariEnv(AtariConfig(game="video_cube"))
    tasks = env.task_set()
    variants = len(env.emu.available_modes) + len(env.emu.available_difficulties) - 1
    assert variants == 154
    assert [len(tasks.split_tasks(s.name)) for s in tasks.splits()] == [
        variants * SEEDS_PER_VARIANT[s.name] for s in tasks.splits()
    ]
    assert max(len(tasks.split_tasks(s.name)) for s in tasks.splits()) == 15_400
    assert tasks.check() == []
    last = tasks.task("test", 154 * 20 - 1)
    assert tasks.locate(last.id) == ("test", 154 * 20 - 1, last)
    env.close()
