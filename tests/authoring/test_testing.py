"""``openenv_mcp.authoring.testing.check_env``: the author's contract check passes for every bundled
environment and names what a broken one gets wrong."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict

from openenv_mcp.authoring.testing import CheckReport, EnvCheckError, check_env, values_equal
from openenv_mcp.environment import Environment, StepResult
from openenv_mcp_envs.atari import AtariEnv
from openenv_mcp_envs.echo import EchoEnv
from openenv_mcp_envs.gymnasium import GymnasiumEnv
from tests import dict_env, door_env

CASES: list[tuple[type[Environment[Any]], dict[str, Any]]] = [
    (EchoEnv, {}),
    (EchoEnv, {"frame": True}),
    (AtariEnv, {"game": "breakout"}),
    (AtariEnv, {"game": "pong", "obs_type": "grayscale"}),
    (GymnasiumEnv, {"id": "Blackjack-v1"}),
    (GymnasiumEnv, {"id": "Pendulum-v1", "render": False}),
    (GymnasiumEnv, {"id": dict_env.ID}),
    (door_env.DoorEnv, {}),
    (door_env.DoorEnv, {"legality": "parse"}),
]


@pytest.mark.parametrize(("env_cls", "config"), CASES, ids=lambda c: str(c))
def test_bundled_environments_pass(env_cls: type[Environment[Any]], config: dict[str, Any]) -> None:
    report = check_env(env_cls, worker=False, **config)
    assert report.ok and "MCP round trip" in report.passed, report
    assert "worker process" in " ".join(report.skipped)


@pytest.mark.integration
@pytest.mark.parametrize(("env_cls", "config"), CASES[:3], ids=lambda c: str(c))
def test_bundled_environments_pass_in_a_worker_process(
    env_cls: type[Environment[Any]], config: dict[str, Any]
) -> None:
    report = check_env(env_cls, **config)
    assert report.ok and "worker process" in report.passed, report


class NoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Flawed(Environment[NoConfig]):
    """One flaw per class attribute below; each must be caught by name."""

    name: ClassVar[str] = "flawed"
    description: ClassVar[str] = "Broken on purpose."
    Config: ClassVar[type[BaseModel]] = NoConfig
    outside: ClassVar[bool] = False
    unseeded: ClassVar[bool] = False
    forgetful: ClassVar[bool] = False

    def __init__(self, config: NoConfig) -> None:
        super().__init__(config)
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
        self.rng = np.random.default_rng()

    def _obs(self) -> np.ndarray:
        value = 5.0 if self.outside else self.rng.random()
        return np.array([value], dtype=np.float32)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self.rng = np.random.default_rng(None if self.unseeded else seed)
        return self._obs(), {}

    def step(self, action: Any) -> StepResult:
        return StepResult(self._obs(), float(action), False, False, {})

    def snapshot(self) -> Any:
        return None if self.forgetful else self.rng.bit_generator.state

    def restore(self, snapshot: Any) -> None:
        if snapshot is not None:
            self.rng.bit_generator.state = snapshot


class Outside(Flawed):
    outside = True


class Unseeded(Flawed):
    unseeded = True


class Forgetful(Flawed):
    forgetful = True


class NoSpaces(Flawed):
    def __init__(self, config: NoConfig) -> None:
        super().__init__(config)
        del self.observation_space


@pytest.mark.parametrize(
    ("env_cls", "failure"),
    [
        (Outside, "an episode: reset returned array([5.], dtype=float32), which is not in"),
        (Unseeded, "seeded determinism: the same seed and actions gave"),
        (Forgetful, "snapshots restore exactly and pickle: after restore the same actions"),
        (NoSpaces, "declarations: NoSpaces.observation_space must be a gymnasium.spaces.Space"),
    ],
)
def test_each_flaw_is_named_with_what_to_do(env_cls: type[Flawed], failure: str) -> None:
    report = check_env(env_cls, worker=False, mcp=False, raise_on_failure=False)
    assert not report.ok and any(f.startswith(failure) for f in report.failures), report
    with pytest.raises(EnvCheckError, match=env_cls.__name__) as caught:
        check_env(env_cls, worker=False, mcp=False)
    assert isinstance(caught.value.report, CheckReport)


def test_a_flawless_one_passes_and_bad_config_is_reported() -> None:
    assert check_env(Flawed, worker=False).ok
    report = check_env(EchoEnv, raise_on_failure=False, max_steps="many")
    assert report.failures and report.failures[0].startswith("config: EchoEnv: option 'max_steps'")


def test_values_equal_compares_structure_and_dtypes() -> None:
    assert values_equal((np.int64(3), {"a": np.zeros(2)}), (3, {"a": np.zeros(2)}))
    assert not values_equal(np.zeros(2, np.float32), np.zeros(2, np.float64))
    assert not values_equal([1, 2], [1, 2, 3])
