"""``openenv-mcp bench ... --vs``: each workload runs and reports its fields; both sides
run the same episodes. No test asserts a time or a ratio."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from openenv_mcp.bench import BenchConfig
from openenv_mcp.bench._versus import run_versus
from openenv_mcp.cli import app
from openenv_mcp.errors import ArgumentError

runner = CliRunner()

FIELDS = {
    "vs": str,
    "servers": int,
    "workers": int,
    "batch": int,
    "other": str,
    "other_per_s": float,
    "mcp_per_s": float,
    "ratio": float,
    "ratio_repeats": list,
    "observation_bytes": int,
    "load_average": (list, type(None)),
}


def versus_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["bench", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    for name, kind in FIELDS.items():
        assert isinstance(data[name], kind), (name, data[name])
    assert len(data["ratio_repeats"]) == data["repeats"]
    return data


@pytest.mark.integration
def test_vector_env_against_gymnasium_and_two_servers() -> None:
    data = versus_json(
        "gymnasium", "--id", "CartPole-v1", "--vs", "gymnasium-sync", "--batch", "3",
        "--servers", "2", "--steps", "60", "--repeats", "2", "--warmup", "2",
    )  # fmt: skip
    assert data["same_run"] is True  # same seeds and actions: the same episodes
    assert data["servers"] == 2 and data["observation_bytes"] == 16


@pytest.mark.integration
def test_preprocessed_pong_against_envpool() -> None:
    data = versus_json(
        "atari", "--game", "pong", "--preprocess", "--frame-stack", "4", "--vs", "envpool",
        "--batch", "2", "--steps", "8", "--repeats", "1", "--warmup", "1",
    )  # fmt: skip
    assert data["observation_bytes"] == 4 * 84 * 84 and data["same_run"] is None
    assert data["other"].startswith("EnvPool")


@pytest.mark.integration
def test_sb3_ppo_is_the_same_run_both_ways() -> None:
    # PPO collects 2048 steps before its first update whatever --steps says.
    data = versus_json(
        "gymnasium", "--id", "CartPole-v1", "--vs", "sb3-ppo", "--steps", "64", "--repeats", "1"
    )
    assert data["same_run"] is True


def test_what_it_cannot_compare_it_says() -> None:
    with pytest.raises(ArgumentError, match="knows atari and gymnasium, not 'echo'"):
        run_versus(BenchConfig(env="echo", batch=2, steps=4, repeats=1), "gymnasium-sync")
    with pytest.raises(ArgumentError, match="compares Atari envs"):
        run_versus(
            BenchConfig(env="gymnasium", env_args=("--id", "CartPole-v1"), steps=4), "envpool"
        )
