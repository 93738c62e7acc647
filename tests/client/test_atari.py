"""MCPEnvClient over Atari: frame for frame the same as ale-py's own ALE/Pong-v5."""

from __future__ import annotations

from typing import Any

import anyio
import gymnasium as gym
import numpy as np
import pytest

from openenv_mcp.client import MCPEnvClient, MCPVectorEnv
from openenv_mcp.errors import InvalidAction
from tests.servers import serve_target

ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)

pytestmark = pytest.mark.anyio

WAIT = 120
STEPS = 120


def reference_episode(seed: int, actions: list[int]) -> list[tuple[Any, ...]]:
    """The same seeded episode through ale-py's Gymnasium env, untouched by us."""
    env = gym.make("ALE/Pong-v5")
    try:
        obs, _ = env.reset(seed=seed)
        trace: list[tuple[Any, ...]] = [(obs,)]
        for action in actions:
            obs, reward, terminated, truncated, _ = env.step(action)
            trace.append((obs, float(reward), terminated, truncated))
        return trace
    finally:
        env.close()


# Every transport with zstd frames (the default); plain raw and PNG decoding once
# each (they are transport-independent).
@pytest.mark.parametrize(
    ("transport", "frames"),
    [
        ("memory", "zstd"),
        pytest.param("stdio", "zstd", marks=pytest.mark.integration),
        pytest.param("http", "zstd", marks=pytest.mark.integration),
        pytest.param("stdio", "raw", marks=pytest.mark.integration),
        ("memory", "png"),
    ],
)
async def test_seeded_episode_equals_ale_py_frame_for_frame(transport: str, frames: str) -> None:
    actions = [int(a) for a in np.random.default_rng(1).integers(6, size=STEPS)]
    expected = reference_episode(seed=5, actions=actions)
    with anyio.fail_after(WAIT), serve_target(transport, "atari", "--game", "pong") as target:
        async with MCPEnvClient(target, frames=frames) as env:  # type: ignore[arg-type]
            obs, info = await env.reset(seed=5)
            assert np.array_equal(obs, expected[0][0]) and info["lives"] == 0
            for i, action in enumerate(actions):
                obs, reward, terminated, truncated, info = await env.step(action)
                ref_obs, ref_reward, ref_terminated, ref_truncated = expected[i + 1]
                assert np.array_equal(obs, ref_obs), f"frame {i + 1} differs"
                assert (reward, terminated, truncated) == (
                    ref_reward,
                    ref_terminated,
                    ref_truncated,
                )
            assert info["step"] == STEPS


async def test_actions_spaces_and_tools() -> None:
    with anyio.fail_after(WAIT), serve_target("memory", "atari", "--game", "pong") as target:
        async with MCPEnvClient(target) as env:
            reference = gym.make("ALE/Pong-v5")
            try:
                assert env.get_action_meanings() == reference.unwrapped.get_action_meanings()
                assert env.action_space == reference.action_space
                assert env.observation_space == reference.observation_space
            finally:
                reference.close()
            assert env.actions is not None and env.actions[1].meaning == "no effect"  # Pong's FIRE
            legal = await env.call("legal_actions")
            assert [a["name"] for a in legal["actions"]] == env.get_action_meanings()
            obs, _ = await env.reset(seed=0)
            assert obs.flags.writeable and obs.dtype == np.uint8
            # an index, a numpy integer, or a name
            for action in (1, np.int64(2), "LEFT"):
                obs, *_ = await env.step(action)
                assert obs in env.observation_space
            with pytest.raises(InvalidAction, match="legal: 0-5"):
                await env.step(6)
            frame = await env.render()  # the observation is the frame: no call
            assert frame is not None and np.array_equal(frame, obs) and frame is not obs


async def test_grayscale_observation_and_rgb_render() -> None:
    options = ("--game", "breakout", "--obs-type", "grayscale")
    with anyio.fail_after(WAIT), serve_target("memory", "atari", *options) as target:
        async with MCPEnvClient(target) as env:
            assert env.observation_space.shape == (210, 160)
            obs, _ = await env.reset(seed=0)
            assert obs.shape == (210, 160)
            frame = await env.render()  # a PNG from the server
            assert frame is not None and frame.shape == (210, 160, 3)


def test_vector_of_atari_episodes() -> None:
    with serve_target("memory", "atari", "--game", "pong") as target:
        envs = MCPVectorEnv(target, num_envs=3)
        try:
            obs, infos = envs.reset(seed=0)
            assert obs.shape == (3, 210, 160, 3) and obs.dtype == np.uint8
            obs, rewards, _, _, infos = envs.step(np.array([0, 1, 2]))
            assert obs.shape == (3, 210, 160, 3) and rewards.shape == (3,)
            assert infos["lives"].tolist() == [0, 0, 0]
        finally:
            envs.close()
