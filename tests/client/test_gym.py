"""The Gymnasium adapter: check_env for every registered env, rendering, determinism."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from openenv_mcp.authoring.testing import values_equal
from openenv_mcp.client import MCPEnvClient, MCPGymEnv
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled, InvalidAction, ResetNeeded
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import build_server
from openenv_mcp.spaces import JsonSpace
from tests import dict_env
from tests.servers import (
    REQUIRED_OPTIONS,
    TRANSPORTS,
    memory_server,
    registered_envs,
    serve_target,
    stdio_command,
)

#: Options that make each registered env quick to check (defaults otherwise).
QUICK_OPTIONS: dict[str, dict[str, Any]] = {
    "atari": {"game": "pong"},
    # The built-in engine: Stockfish is a process (its own tests are integration).
    "chess": {"engine": "builtin", "depth": 1},
    **REQUIRED_OPTIONS,
}


def registered() -> list[Any]:
    return registered_envs()


def server_for(name: str, **options: Any) -> Any:
    try:
        get_env_class(name)
    except DependencyNotInstalled as exc:
        pytest.skip(f"{name} is not installed here: {exc}")
    return build_server(name, **{**QUICK_OPTIONS.get(name, {}), **options})


@pytest.mark.parametrize("name", registered())
# Gymnasium's default CartPole has unbounded velocities, and check_env says so of
# CartPole itself; the adapter only passes the bounds on.
@pytest.mark.filterwarnings("ignore:.*Box observation space m.* is (-)?infinity")
def test_check_env_passes_for_every_registered_env(name: str) -> None:
    env = MCPGymEnv(server_for(name))
    try:
        # check_env also makes siblings from env.spec for each render mode
        check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("name", registered())
def test_seeded_rollouts_repeat(name: str) -> None:
    env = MCPGymEnv(server_for(name))
    try:
        runs = []
        for _ in range(2):
            env.action_space.seed(5)
            obs, info = env.reset(seed=123)
            trace = [obs]
            for _ in range(20):
                # Gymnasium's convention: sample among the legal actions where masked.
                action = env.action_space.sample(mask=info.get("action_mask"))
                obs, reward, terminated, truncated, info = env.step(action)
                trace += [obs, reward, terminated, truncated]
                if terminated or truncated:
                    obs, info = env.reset()  # continues the seeded chain
                    trace.append(obs)
            runs.append(trace)
        assert all(values_equal(a, b) for a, b in zip(*runs, strict=True))
    finally:
        env.close()


def test_render_rgb_array_and_render_modes() -> None:
    env = MCPGymEnv(memory_server("echo", "--frame"), render_mode="rgb_array")
    try:
        assert env.metadata["render_modes"] == ["rgb_array"]
        env.reset(options={"greeting": "hi"})
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.shape == (16, 16, 3)
        check_env(env)
    finally:
        env.close()
    with pytest.raises(ArgumentError, match="render_mode 'rgb_array' is not available"):
        MCPGymEnv(memory_server("echo"), render_mode="rgb_array")


def test_gymnasium_make_through_the_spec() -> None:
    env = MCPGymEnv(memory_server("echo", "--max-steps", "2"))
    try:
        assert env.spec is not None and env.spec.id == "openenv_mcp/echo-v0"
        made = gym.make(env.spec)  # wrapped by gymnasium: order enforcing, checker
        try:
            with pytest.raises(gym.error.ResetNeeded):
                made.step("x")
            made.reset(seed=1)
            assert made.step("ab")[0] == "ab"
            assert made.unwrapped.client.server_spec.config["max_steps"] == 2
        finally:
            made.close()
    finally:
        env.close()


def test_adapter_faces_of_the_client() -> None:
    env = MCPEnvClient(memory_server("echo")).as_gym()
    try:
        obs, info = env.reset(seed=2, options={"greeting": "x"})
        assert obs == "x" and info["step"] == 0
        snapshot = env.client.snapshot()
        env.step("y")
        obs, info = env.reset(options={"from_snapshot": snapshot})
        assert (obs, info["step"]) == ("x", 0)
        with pytest.raises(InvalidAction):
            env.step(3)
        assert env.client.call("history") == {"messages": ["x"]}
    finally:
        env.close()
        env.close()  # idempotent, as check_env expects
    with pytest.raises(ResetNeeded):
        env.step("after close")


#: Action and observation spaces the client once could not rebuild (issue 13): Box
#: actions, a Tuple observation, Dict observations and actions.
STRUCTURED = [
    "Pendulum-v1",
    "MountainCarContinuous-v0",
    "LunarLanderContinuous-v3",
    "Blackjack-v1",
    dict_env.ID,
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("env_id", STRUCTURED)
@pytest.mark.filterwarnings("ignore:.*symmetric and normalized space")  # Pendulum's own
def test_continuous_and_structured_spaces_pass_check_env(env_id: str, transport: str) -> None:
    """The adapter's spaces are exactly the environment's, over every transport: a
    Box action is sent as numbers, a Tuple or Dict observation arrives as one."""
    raw = gym.make(env_id)
    try:
        with serve_target(transport, "gymnasium", "--id", env_id, "--no-render") as target:
            env = MCPGymEnv(target)
            try:
                assert env.action_space == raw.action_space
                assert env.observation_space == raw.observation_space
                check_env(env, skip_render_check=True)
                obs, _ = env.reset(seed=3)
                expected, _ = raw.reset(seed=3)
                assert env.observation_space.contains(obs)
                assert values_equal(obs, expected)
                env.action_space.seed(0)
                action = env.action_space.sample()
                got, want = env.step(action), raw.step(action)
                assert values_equal(got[0], want[0])
                assert got[1:3] == want[1:3]
            finally:
                env.close()
    finally:
        raw.close()


def test_json_observations_get_an_honest_space() -> None:
    space = JsonSpace()
    assert space.contains({"a": [1, 2.5, None, "x", True]}) and not space.contains(object())
    assert isinstance(space.sample(), str)  # any JSON value: a short string
    held = JsonSpace("a count", {"type": "integer", "minimum": 0, "maximum": 3})
    held.seed(0)
    assert {held.sample() for _ in range(40)} == {0, 1, 2, 3}
    assert not held.contains(4) and held.contains(2)
    with pytest.raises(NotImplementedError, match="cannot draw"):
        JsonSpace("opaque", {"not": {"type": "string"}}).sample()


@pytest.mark.integration
def test_the_adapter_over_stdio() -> None:
    env = MCPGymEnv(stdio_command("echo", "--max-steps", "3"))
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()
