"""``serve atari --preprocess``: Gymnasium's AtariPreprocessing (and FrameStackObservation)
done on the server, equal to the wrappers over local ALE for the same seeds and actions."""

from __future__ import annotations

from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

from openenv_mcp.client import MCPGymEnv
from openenv_mcp.errors import ArgumentError
from openenv_mcp.options import make_config
from openenv_mcp.testing import values_equal
from openenv_mcp_envs.atari import AtariConfig, AtariEnv
from tests.servers import memory_server

gym.register_envs(ale_py)


def local_pipeline(game: str, stack: int = 1, **options: Any) -> gym.Env[Any, Any]:
    env: gym.Env[Any, Any] = AtariPreprocessing(gym.make(f"ALE/{game}-v5", frameskip=1), **options)
    return FrameStackObservation(env, stack) if stack > 1 else env


def served(game: str, **options: Any) -> AtariEnv:
    return AtariEnv(
        make_config(AtariConfig, {"game": game, "preprocess": True, **options}, "atari")
    )


def compare(env: AtariEnv, local: gym.Env[Any, Any], seeds: list[int | None], steps: int) -> None:
    rng = np.random.default_rng(7)
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        assert values_equal(obs, local.reset(seed=seed)[0]), f"reset(seed={seed})"
        for t in range(steps):
            action = int(rng.integers(env.action_space.n))  # type: ignore[attr-defined]
            ours, theirs = env.step(action), local.step(action)
            assert values_equal(ours.observation, theirs[0]), f"seed {seed} step {t}"
            assert (ours.reward, ours.terminated, ours.truncated) == tuple(theirs[1:4])
            if ours.terminated or ours.truncated:
                break


def test_standard_preprocessing_and_stack_equal_the_wrappers() -> None:
    env = served("pong", frame_stack=4)
    try:
        assert env.observation_space.shape == (4, 84, 84)
        compare(env, local_pipeline("Pong", 4), [0, None, 2**33], 120)
    finally:
        env.close()


def test_rgb_life_loss_and_other_sizes_equal_the_wrappers() -> None:
    options = {"screen_size": 64, "noop_max": 5, "terminal_on_life_loss": True}
    env = served("breakout", obs_type="rgb", frameskip=3, **options)
    try:
        assert env.observation_space.shape == (64, 64, 3)
        local = local_pipeline("Breakout", 1, grayscale_obs=False, frame_skip=3, **options)
        compare(env, local, [3, None, None], 80)
    finally:
        env.close()


def test_snapshots_carry_the_wrappers_state() -> None:
    env = served("pong", frame_stack=4)
    try:
        env.reset(seed=1)
        for _ in range(5):
            env.step(2)
        saved = env.snapshot()
        first = [env.step(a).observation for a in (3, 3, 1)]
        env.restore(saved)
        assert values_equal([env.step(a).observation for a in (3, 3, 1)], first)
    finally:
        env.close()


def test_options_that_only_mean_something_with_preprocess() -> None:
    with pytest.raises(ArgumentError, match="frame_stack only apply with preprocess"):
        make_config(AtariConfig, {"frame_stack": 4}, "atari")
    with pytest.raises(ArgumentError, match="obs_type 'ram' cannot"):
        make_config(AtariConfig, {"preprocess": True, "obs_type": "ram"}, "atari")
    assert make_config(AtariConfig, {"preprocess": True}, "atari").obs_type == "grayscale"


def test_served_preprocessing_sends_small_observations() -> None:
    env = MCPGymEnv(memory_server("atari", "--game", "pong", "--preprocess", "--frame-stack", "4"))
    try:
        obs, _ = env.reset(seed=0)
        local = local_pipeline("Pong", 4)
        assert values_equal(obs, local.reset(seed=0)[0])
        for action in [0, 2, 3, 2, 1]:
            assert values_equal(env.step(action)[0], local.step(action)[0])
        # Agents still see the screen: the frame is the emulator's RGB screen.
        assert env.client.server_spec.has_frame and not env.client.server_spec.frame_is_observation
    finally:
        env.close()
