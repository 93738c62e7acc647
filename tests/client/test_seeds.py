"""Gymnasium's seeding, exactly: through MCPGymEnv and MCPVectorEnv, the same seeds and
actions give what ``gymnasium.make`` / ``gymnasium.make_vec`` give, unseeded resets and
autoresets included; every seed Gymnasium takes is taken (SB3 seeds with any uint32)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from openenv_mcp.client import MCPEnvClient, MCPGymEnv, MCPVectorEnv
from openenv_mcp.errors import ArgumentError
from openenv_mcp.testing import values_equal
from tests.servers import memory_server, stdio_command

gym.register_envs(ale_py)

#: Seeds past what the server once took (2**31 - 1): SB3's uint32 draws, and beyond.
BIG_SEEDS = [2**31, 2**32 - 1, 2**64 + 1, 2**100 + 7]


def rollout(env: gym.Env[Any, Any], seeds: list[int | None], steps: int) -> list[Any]:
    """Everything an env hands out over resets with ``seeds`` (``None``: unseeded) and
    seeded random actions, as one list."""
    rng = np.random.default_rng(11)
    trace: list[Any] = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        trace.append(obs)
        for _ in range(steps):
            obs, reward, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))  # type: ignore[attr-defined]
            trace += [obs, float(reward), terminated, truncated]
            if terminated or truncated:
                break
    return trace


def assert_same(ours: list[Any], theirs: list[Any]) -> None:
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert values_equal(a, b), f"item {i} differs: {a!r} vs {b!r}"


@pytest.fixture
def cartpole() -> Iterator[MCPGymEnv]:
    env = MCPGymEnv(memory_server("gymnasium", "--id", "CartPole-v1"))
    yield env
    env.close()


def test_cartpole_unseeded_resets_continue_the_envs_own_stream(cartpole: MCPGymEnv) -> None:
    seeds: list[int | None] = [3, None, None, 8, None]
    assert_same(rollout(cartpole, seeds, 60), rollout(gym.make("CartPole-v1"), seeds, 60))


def test_every_seed_gymnasium_takes_is_taken(cartpole: MCPGymEnv) -> None:
    local = gym.make("CartPole-v1")
    for seed in BIG_SEEDS:
        assert_same(rollout(cartpole, [seed, None], 10), rollout(local, [seed, None], 10))
    # What Gymnasium refuses, the adapter refuses with Gymnasium's own error.
    for bad in (-1, 1.5):
        with pytest.raises(gym.error.Error, match="Seed must be"):
            cartpole.reset(seed=bad)  # type: ignore[arg-type]


def test_the_server_refuses_a_negative_seed_saying_what_it_takes() -> None:
    with MCPEnvClient(memory_server("gymnasium", "--id", "CartPole-v1")).sync() as client:
        with pytest.raises(ArgumentError, match=r"seed.*greater than or equal to 0"):
            client.reset(seed=-1)
        with pytest.raises(ArgumentError, match="seed must be a non-negative integer"):
            client.reset(seed=2.5)  # type: ignore[arg-type]
        obs, _ = client.reset(seed=2**70 + 1)
        assert values_equal(obs, gym.make("CartPole-v1").reset(seed=2**70 + 1)[0])


def test_np_random_mirrors_the_servers_generator(cartpole: MCPGymEnv) -> None:
    local = gym.make("CartPole-v1")
    for seed in (5, None):
        cartpole.reset(seed=seed)
        local.reset(seed=seed)
        assert (
            cartpole.np_random.bit_generator.state == local.unwrapped.np_random.bit_generator.state
        )
    # A wrapper's draws from env.unwrapped.np_random go back with the next unseeded
    # reset, so the env's own draws come after them, as in one process.
    for env in (cartpole, local):
        env.unwrapped.np_random.integers(1, 31, size=7)
    assert_same(rollout(cartpole, [None], 30), rollout(local, [None], 30))


def test_sb3_seeds_above_2_31_work(cartpole: MCPGymEnv) -> None:
    from stable_baselines3.common.env_util import make_vec_env

    # What make_vec_env / make_atari_env do with seed=None: a random uint32 each.
    venv = make_vec_env(lambda: MCPGymEnv(memory_server("gymnasium", "--id", "CartPole-v1")))
    local = make_vec_env("CartPole-v1")
    try:
        for vec in (venv, local):
            vec.seed(2**32 - 5)
        assert values_equal(venv.reset(), local.reset())
    finally:
        venv.close()
        local.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_cartpole_matches_make_vec(mode: AutoresetMode) -> None:
    n = 3
    ours = MCPVectorEnv(
        memory_server("gymnasium", "--id", "CartPole-v1"), num_envs=n, autoreset_mode=mode
    )
    theirs = gym.make_vec(
        "CartPole-v1", n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}
    )
    try:
        rng = np.random.default_rng(4)
        ended = 0
        for seed in (7, None):  # None: every episode goes on with its own stream
            assert values_equal(ours.reset(seed=seed)[0], theirs.reset(seed=seed)[0])
            for _ in range(100):
                actions = rng.integers(2, size=n)
                a, b = ours.step(actions), theirs.step(actions)
                for x, y in zip(a[:4], b[:4], strict=True):
                    assert values_equal(x, y)
                if "final_obs" in b[4]:
                    assert values_equal(list(a[4]["final_obs"]), list(b[4]["final_obs"]))
                ended += int(np.sum(a[2] | a[3]))
        assert ended > 5  # autoresets happened, unseeded, and matched
    finally:
        ours.close()
        theirs.close()


@pytest.mark.integration
def test_pong_single_and_vector_over_stdio_match_gymnasium() -> None:
    cap = ("--max-episode-steps", "40")  # episodes end, so resets and autoresets happen
    single = MCPGymEnv(stdio_command("atari", "--game", "pong", *cap))
    try:
        seeds: list[int | None] = [1, None, 2**40]
        local = gym.make("ALE/Pong-v5", max_episode_steps=40)
        assert_same(rollout(single, seeds, 60), rollout(local, seeds, 60))
    finally:
        single.close()
    n = 3
    ours = MCPVectorEnv(stdio_command("atari", "--game", "pong", *cap), num_envs=n)
    theirs = gym.make_vec("ALE/Pong-v5", n, vectorization_mode="sync", max_episode_steps=40)
    try:
        rng = np.random.default_rng(9)
        assert values_equal(ours.reset(seed=5)[0], theirs.reset(seed=5)[0])
        for _ in range(90):  # two autoresets each, unseeded
            actions = rng.integers(6, size=n)
            for x, y in zip(ours.step(actions)[:4], theirs.step(actions)[:4], strict=True):
                assert values_equal(x, y)
    finally:
        ours.close()
        theirs.close()


@pytest.mark.integration
def test_sb3_ppo_on_cartpole_is_the_same_run_through_mcp() -> None:
    """The issue's case: a PPO run through MCP gave other returns than the same run locally."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)

    def returns(make: Any) -> list[float]:
        venv = make_vec_env(make, n_envs=2, seed=0)
        try:
            model = PPO(
                "MlpPolicy", venv, seed=0, n_steps=256, batch_size=64, n_epochs=2, device="cpu"
            )
            model.learn(3072)
            return [r for rs in venv.env_method("get_episode_rewards") for r in rs]
        finally:
            venv.close()

    command = stdio_command("gymnasium", "--id", "CartPole-v1")
    ours = returns(lambda: MCPGymEnv(command))
    theirs = returns(lambda: gym.make("CartPole-v1"))
    assert len(theirs) > 50
    assert ours == theirs
