"""The standard Atari pipelines, unchanged, on an Atari MCPGymEnv: SB3's AtariWrapper and
make_atari_env, Gymnasium's AtariPreprocessing. What they read of the emulator
(``unwrapped.ale``, ``_frameskip``, ``np_random``) is answered over MCP, and their results
equal the same pipeline's on local ALE for the same seeds and actions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import AtariPreprocessing

from openenv_mcp.client import MCPGymEnv
from openenv_mcp.testing import values_equal
from tests.servers import memory_server

gym.register_envs(ale_py)


def atari(*options: str) -> MCPGymEnv:
    return MCPGymEnv(memory_server("atari", *options))


def run_both(
    local: gym.Env[Any, Any], remote: gym.Env[Any, Any], seeds: list[Any], steps: int
) -> int:
    """Reset with each seed (``None``: unseeded) and take the same random actions on both;
    every observation, reward and flag must be equal. Returns the steps taken."""
    rng = np.random.default_rng(3)
    taken = 0
    for seed in seeds:
        ours, theirs = remote.reset(seed=seed), local.reset(seed=seed)
        assert values_equal(ours[0], theirs[0]), f"reset(seed={seed})"
        for t in range(steps):
            action = int(rng.integers(local.action_space.n))  # type: ignore[attr-defined]
            a, b = remote.step(action), local.step(action)
            assert values_equal(a[0], b[0]), f"seed {seed}, step {t}: observation"
            assert a[1:4] == b[1:4], f"seed {seed}, step {t}: {a[1:4]} vs {b[1:4]}"
            taken += 1
            if a[2] or a[3]:
                break
    return taken


@pytest.fixture(scope="module")
def breakout() -> Iterator[MCPGymEnv]:
    env = atari("--game", "breakout")
    yield env
    env.close()


@pytest.fixture(scope="module")
def pong_frameskip_1() -> Iterator[MCPGymEnv]:
    env = atari("--game", "pong", "--frameskip", "1")
    yield env
    env.close()


def test_sb3_atari_wrapper_with_its_defaults(breakout: MCPGymEnv) -> None:
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    # Noop starts from unwrapped.np_random, FIRE on reset, lives from unwrapped.ale (a
    # lost life ends the episode, then reset steps instead of resetting), max-and-skip.
    taken = run_both(
        AtariWrapper(gym.make("ALE/Breakout-v5")), AtariWrapper(breakout), [4, None, None], 150
    )
    assert taken > 10  # lives lost: EpisodicLifeEnv ended episodes and stepped on


def test_sb3_make_atari_env() -> None:
    from stable_baselines3.common.env_util import make_atari_env

    # Served on one server: each env its own episode, as make_atari_env makes them.
    server = memory_server("atari", "--game", "breakout")
    ours = make_atari_env(lambda: MCPGymEnv(server), n_envs=2, seed=2**32 - 3)
    theirs = make_atari_env("ALE/Breakout-v5", n_envs=2, seed=2**32 - 3)
    try:
        assert values_equal(ours.reset(), theirs.reset())
        rng = np.random.default_rng(1)
        for _ in range(120):
            actions = rng.integers(4, size=2)
            ours.step_async(actions)
            theirs.step_async(actions)
            a, b = ours.step_wait(), theirs.step_wait()
            for x, y in zip(a[:3], b[:3], strict=True):
                assert values_equal(x, y)
    finally:
        ours.close()
        theirs.close()


def test_gymnasium_atari_preprocessing_with_its_defaults(pong_frameskip_1: MCPGymEnv) -> None:
    # Its default frame_skip 4 needs an env stepping one frame (unwrapped._frameskip == 1).
    local = AtariPreprocessing(gym.make("ALE/Pong-v5", frameskip=1))
    run_both(local, AtariPreprocessing(pong_frameskip_1), [0, None], 80)


def test_atari_preprocessing_rgb_and_life_loss() -> None:
    env = atari("--game", "breakout", "--frameskip", "1")
    try:
        options = {"terminal_on_life_loss": True, "grayscale_obs": False, "noop_max": 10}
        local = AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1), **options)
        run_both(local, AtariPreprocessing(env, **options), [9, None], 60)
    finally:
        env.close()


def test_atari_preprocessing_refuses_a_skipping_env_as_it_does_locally() -> None:
    env = atari("--game", "pong")
    try:
        assert env.unwrapped._frameskip == 4
        with pytest.raises(ValueError, match="Disable frame-skipping"):
            AtariPreprocessing(gym.make("ALE/Pong-v5"))
        with pytest.raises(ValueError, match="Disable frame-skipping"):
            AtariPreprocessing(env)
    finally:
        env.close()


def test_ale_reads_equal_a_local_ale(breakout: MCPGymEnv) -> None:
    local = gym.make("ALE/Breakout-v5")
    for env in (breakout, local):
        env.reset(seed=6)
        for action in [1, 2, 2, 3, 0, 1]:
            env.step(action)
    ours, theirs = breakout.unwrapped.ale, local.unwrapped.ale  # type: ignore[attr-defined]
    assert ours.lives() == theirs.lives() == 5
    into = np.zeros((210, 160), np.uint8)
    assert values_equal(ours.getScreenGrayscale(into), theirs.getScreenGrayscale())
    assert values_equal(into, theirs.getScreenGrayscale())
    assert values_equal(ours.getScreenRGB(), theirs.getScreenRGB())
    assert values_equal(ours.getRAM(), theirs.getRAM())
    assert ours.getScreenDims() == tuple(theirs.getScreenDims())
    assert ours.getEpisodeFrameNumber() == theirs.getEpisodeFrameNumber()
    assert ours.game_over() == theirs.game_over()
    with pytest.raises(AttributeError, match="'act' is not among them"):
        ours.act(0)


def test_ale_reads_ride_along_after_the_first() -> None:
    """One round trip for the first read of a screen, none after: every step brings it."""
    breakout = atari("--game", "breakout")
    session = breakout.client.session
    calls: list[str] = []
    real = session.call

    async def counted(tool: str, args: dict[str, Any]) -> Any:
        calls.append(tool)
        return await real(tool, args)

    session.call = counted  # type: ignore[method-assign]
    try:
        breakout.reset(seed=1)
        ale = breakout.unwrapped.ale
        ale.getScreenGrayscale()
        ale.getRAM()
        assert calls == ["reset", "state", "state"]
        local = gym.make("ALE/Breakout-v5")
        local.reset(seed=1)
        for action in [1, 3, 3, 2]:
            breakout.step(action)
            local.step(action)
            assert ale.lives() == local.unwrapped.ale.lives()  # type: ignore[attr-defined]
            assert values_equal(ale.getScreenGrayscale(), local.unwrapped.ale.getScreenGrayscale())  # type: ignore[attr-defined]
            assert values_equal(ale.getRAM(), local.unwrapped.ale.getRAM())  # type: ignore[attr-defined]
        assert calls == ["reset", "state", "state", "step", "step", "step", "step"]
    finally:
        breakout.close()


def test_no_ale_where_there_is_no_emulator() -> None:
    env = MCPGymEnv(memory_server("gymnasium", "--id", "CartPole-v1"))
    try:
        assert not hasattr(env.unwrapped, "ale")
        assert getattr(env.unwrapped, "_frameskip", None) is None
    finally:
        env.close()
