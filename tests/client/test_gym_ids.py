"""Gymnasium ids: ``gym.make("openenv_mcp/<env>-v0")`` and ``make_vec`` with the id as a
string, the form CleanRL, SB3's ``make_vec_env`` and RL Zoo pass along.

Gymnasium 1.x has no plugin entry points: a package's ids exist once a module that
registers them is imported. Importing :mod:`openenv_mcp.client` registers ours, so
``"openenv_mcp.client:openenv_mcp/echo-v0"`` (Gymnasium imports the module before
the lookup) works from a process that imported nothing of ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from importlib.metadata import entry_points

import gymnasium as gym
import pytest

import openenv_mcp.client
from openenv_mcp.client._gym_ids import ENTRY_POINT, VECTOR_ENTRY_POINT, gym_id, register_gym_ids
from openenv_mcp.registry import ENTRY_POINT_GROUP
from tests.servers import ROOT, stdio_command

CARTPOLE = stdio_command("gymnasium", "--id", "CartPole-v1", "--no-render")
#: With frames: SB3's make_vec_env asks for render_mode="rgb_array" unless told otherwise.
CARTPOLE_FRAMES = stdio_command("gymnasium", "--id", "CartPole-v1")


def run_fresh(code: str) -> str:
    """``code`` in a new interpreter (nothing of ours imported, nothing registered yet);
    what it printed last."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Overriding environment" not in done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_importing_the_client_registers_an_id_per_env_name() -> None:
    assert openenv_mcp.client  # imported above: that registered the ids
    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {"echo", "gymnasium", "atari"} <= names
    for name in names:
        spec = gym.spec(gym_id(name))
        assert spec.entry_point == ENTRY_POINT
        assert spec.vector_entry_point == VECTOR_ENTRY_POINT
        assert spec.kwargs == {"target": ["openenv-mcp", "serve", name]}
    assert gym_id("echo") == "openenv_mcp/echo-v0"


def test_registering_again_changes_nothing_and_warns_nothing() -> None:
    before = {k: v for k, v in gym.registry.items() if k.startswith("openenv_mcp/")}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register_gym_ids()
        register_gym_ids()
    after = {k: v for k, v in gym.registry.items() if k.startswith("openenv_mcp/")}
    assert after == before


def test_a_name_gymnasium_cannot_take_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from openenv_mcp.client import _gym_ids

    names = ["has space", "fine_one"]
    monkeypatch.setattr(
        _gym_ids, "entry_points", lambda group: [SimpleNamespace(name=n) for n in names]
    )
    try:
        register_gym_ids()
        assert gym_id("fine_one") in gym.registry
        assert gym_id("has space") not in gym.registry
    finally:
        gym.registry.pop(gym_id("fine_one"), None)


@pytest.mark.integration
def test_registering_imports_no_environment() -> None:
    """No environment module, extra or emulator is imported to register the ids."""
    # The environments' packages (openenv_mcp_envs.*) and what their extras bring.
    heavy = json.dumps(["ale_py", "pygame", "chess", "pyspiel", "pandas", "torch"])
    loaded = run_fresh(
        f"""
        import json, sys
        import gymnasium as gym
        import openenv_mcp.client
        gym.spec("openenv_mcp/atari-v0")
        print(json.dumps([m for m in sys.modules if m.split(".")[0] in {heavy}
                          or m.split(".")[0].endswith("_env")]))
        """
    )
    assert json.loads(loaded) == []


@pytest.mark.integration
def test_gymnasium_make_and_make_vec_by_string_id() -> None:
    printed = run_fresh(
        f"""
        import gymnasium as gym
        target = {CARTPOLE!r}
        # "module:id": Gymnasium imports openenv_mcp.client, which registers the ids.
        env = gym.make("openenv_mcp.client:openenv_mcp/gymnasium-v0", target=target)
        assert env.spec.id == "openenv_mcp/gymnasium-v0"
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs) and reward == 1.0
        env.close()
        # Once imported, the bare id.
        vec = gym.make_vec("openenv_mcp/gymnasium-v0", num_envs=2, target=target)
        assert type(vec.unwrapped).__name__ == "MCPVectorEnv"  # one server, two episodes
        obs, infos = vec.reset(seed=0)
        obs, rewards, terminations, truncations, infos = vec.step(vec.action_space.sample())
        assert obs.shape == (2, 4) and list(rewards) == [1.0, 1.0]
        vec.close()
        sync = gym.make_vec(
            "openenv_mcp/gymnasium-v0", num_envs=2, vectorization_mode="sync", target=target
        )
        obs, infos = sync.reset(seed=0)
        obs, rewards, terminations, truncations, infos = sync.step(sync.action_space.sample())
        assert obs.shape == (2, 4)
        sync.close()
        print("made by id")
        """
    )
    assert printed == "made by id"


@pytest.mark.integration
def test_sb3_make_vec_env_and_the_default_target() -> None:
    printed = run_fresh(
        f"""
        import gymnasium as gym
        import numpy as np
        from stable_baselines3.common.env_util import make_vec_env

        vec = make_vec_env(
            "openenv_mcp.client:openenv_mcp/gymnasium-v0",
            n_envs=2,
            seed=0,
            env_kwargs={{"target": {CARTPOLE_FRAMES!r}}},
        )
        obs = vec.reset()
        for _ in range(5):
            obs, rewards, dones, infos = vec.step(np.array([0, 1]))
        assert obs.shape == (2, 4) and list(rewards) == [1.0, 1.0]
        assert vec.render_mode == "rgb_array" and vec.get_images()[0].shape == (400, 600, 3)
        vec.close()
        # A server without frames: render_mode=None among the env_kwargs.
        vec = make_vec_env(
            "openenv_mcp/gymnasium-v0",
            n_envs=2,
            env_kwargs={{"target": {CARTPOLE!r}, "render_mode": None}},
        )
        vec.reset()
        vec.close()
        # No kwargs at all (CleanRL's gym.make(env_id)): the env served with its defaults.
        env = gym.make("openenv_mcp.client:openenv_mcp/echo-v0")
        env.reset(seed=0)
        assert env.step("hi")[0] == "hi"
        env.close()
        print("sb3 by id")
        """
    )
    assert printed == "sb3 by id"
