"""``openenv-mcp bench``: it runs and reports every field. No test asserts a time or a ratio."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from openenv_mcp.bench import DEFAULT_REPEATS, DEFAULT_STEPS, DEFAULT_WARMUP, BenchConfig
from openenv_mcp.cli import app, bench
from openenv_mcp.client import Session
from tests.servers import memory_server

runner = CliRunner()

TINY = ["--steps", "6", "--repeats", "2", "--warmup", "1"]

# Field -> type(s) of `bench --json`.
FIELDS: dict[str, type | tuple[type, ...]] = {
    "env": str,
    "env_args": list,
    "options": dict,
    "transport": str,
    "frames": str,
    "batch": int,
    "concurrent": bool,
    "workers": int,
    "steps": int,
    "repeats": int,
    "warmup": int,
    "seed": int,
    "raw_steps_per_s": float,
    "mcp_steps_per_s": float,
    "ratio": float,
    "raw_ms_per_step": float,
    "mcp_ms_per_step": float,
    "mcp_ms_per_call": float,
    "raw_steps_per_s_repeats": list,
    "mcp_steps_per_s_repeats": list,
    "ratio_repeats": list,
    "raw_reward_total": float,
    "mcp_reward_total": float,
    "raw_episodes_ended": int,
    "mcp_episodes_ended": int,
    "python": str,
    "implementation": str,
    "platform": str,
    "cpu_count": int,
    "cpus_usable": (int, type(None)),
    "load_average": (list, type(None)),
    "versions": dict,
    "timestamp": str,
}


def bench_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["bench", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)  # exactly one object on stdout
    return data


def check_fields(data: dict[str, Any], repeats: int) -> None:
    assert set(FIELDS) <= set(data), set(FIELDS) - set(data)
    for name, kind in FIELDS.items():
        assert isinstance(data[name], kind), (name, data[name])
    for name in ("raw_steps_per_s_repeats", "mcp_steps_per_s_repeats", "ratio_repeats"):
        assert len(data[name]) == repeats
        assert all(isinstance(x, float) and x > 0 for x in data[name])
    for name in ("raw_steps_per_s", "mcp_steps_per_s", "ratio", "mcp_ms_per_call"):
        assert data[name] > 0
    assert data["ratio"] == pytest.approx(data["mcp_steps_per_s"] / data["raw_steps_per_s"])
    assert data["raw_ms_per_step"] == pytest.approx(1000 / data["raw_steps_per_s"])
    assert data["steps"] % data["batch"] == 0
    assert {"fastmcp", "mcp", "ale-py", "openenv-mcp"} <= set(data["versions"])


def test_json_echo_memory_reports_every_field() -> None:
    data = bench_json("echo", "--transport", "memory", *TINY, "--max-steps", "4")
    check_fields(data, repeats=2)
    assert (data["env"], data["transport"], data["frames"]) == ("echo", "memory", "zstd")
    assert data["options"]["max_steps"] == 4
    # Same seeds and actions on both sides: the same rewards and episode ends.
    assert data["raw_reward_total"] == pytest.approx(data["mcp_reward_total"])
    assert data["raw_episodes_ended"] == data["mcp_episodes_ended"] > 0


@pytest.mark.parametrize("frames", ["zstd", "raw", "none"])
def test_json_echo_memory_batch_steps_the_same_workload(frames: str) -> None:
    args = ["--transport", "memory", "--batch", "3", "--frames", frames, *TINY]
    data = bench_json("echo", *args, "--max-steps", "3")
    check_fields(data, repeats=2)
    assert (data["batch"], data["steps"]) == (3, 6)
    assert data["raw_reward_total"] == pytest.approx(data["mcp_reward_total"])
    assert data["raw_episodes_ended"] == data["mcp_episodes_ended"] > 0


@pytest.mark.parametrize("env", ["echo", "atari"])
def test_json_concurrent_calls_step_the_same_workload(env: str) -> None:
    args = ["--transport", "memory", "--batch", "3", "--concurrent", *TINY]
    data = bench_json(env, *args, *(["--max-steps", "3"] if env == "echo" else []))
    check_fields(data, repeats=2)
    assert (data["batch"], data["concurrent"], data["steps"]) == (3, True, 6)
    assert data["raw_reward_total"] == pytest.approx(data["mcp_reward_total"])
    assert data["raw_episodes_ended"] == data["mcp_episodes_ended"]


@pytest.mark.integration
def test_json_echo_stdio() -> None:
    check_fields(bench_json("echo", "--transport", "stdio", *TINY), repeats=2)


@pytest.mark.integration
def test_json_echo_http() -> None:
    data = bench_json("echo", "--transport", "http", "--frames", "none", *TINY)
    check_fields(data, repeats=2)


@pytest.mark.parametrize(
    ("frames", "batch"),
    [
        ("png", "1"),
        ("zstd", "2"),
        *(
            pytest.param(f, b, marks=pytest.mark.integration)
            for f, b in [("zstd", "1"), ("raw", "2"), ("png", "2")]
        ),
    ],
)
def test_json_atari_memory(frames: str, batch: str) -> None:
    args = ["--transport", "memory", "--frames", frames, "--batch", batch, *TINY]
    data = bench_json("atari", *args, "--game", "pong")
    check_fields(data, repeats=2)
    assert data["options"]["game"] == "pong" and data["frames"] == frames
    assert data["versions"]["ale-py"]


@pytest.mark.integration
def test_json_atari_memory_with_workers_steps_the_same_workload() -> None:
    for concurrent in ([], ["--concurrent"]):
        args = ["--transport", "memory", "--batch", "4", "--workers", "2", *concurrent, *TINY]
        data = bench_json("atari", *args, "--game", "pong")
        check_fields(data, repeats=2)
        assert (data["batch"], data["workers"], data["concurrent"]) == (4, 2, bool(concurrent))
        assert data["raw_reward_total"] == pytest.approx(data["mcp_reward_total"])


@pytest.mark.integration
def test_live_episodes_with_workers_counts_their_memory() -> None:
    data = live("atari", "--transport", "stdio", "--workers", "2", "--live-episodes", "3")
    check_live(data, 3)
    assert data["rss_of"] == "server process with its worker processes"
    assert data["rss_before_mib"] > 150  # the server and two workers with ale-py loaded


def test_table_names_the_ratio_and_logs_go_to_stderr() -> None:
    result = runner.invoke(app, ["bench", "echo", "--transport", "memory", *TINY])
    assert result.exit_code == 0, result.output
    assert "ratio MCP/raw" in result.stdout
    assert "raw (in-process)" in result.stdout and "MCP (memory)" in result.stdout
    assert "repeat 1/2" in result.stderr and "repeat 1/2" not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "0"], "--batch must be at least 1"),
        (["--concurrent"], "it needs --batch 2 or more, got --batch 1"),
        (["--max-step", "3"], "Did you mean '--max-steps'?"),
        (["--frames", "jpeg"], "jpeg"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["bench", "echo", "--transport", "memory", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_png_needs_frame_observations() -> None:
    result = runner.invoke(
        app, ["bench", "atari", "--transport", "memory", "--frames", "png", "--obs-type", "ram"]
    )
    assert result.exit_code == 2
    assert "frames='png'" in result.output


def live(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["bench", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def check_live(data: dict[str, Any], count: int) -> None:
    assert data["live_episodes"] == count
    assert data["answered"] == count and data["failures"] == []
    for name in ("rss_before_mib", "rss_after_mib", "mib_per_episode"):
        assert isinstance(data[name], float)  # Linux: /proc is there
    assert data["rss_before_mib"] > 0 and data["open_s"] >= 0 and data["step_check_s"] >= 0
    assert {"python", "platform", "cpu_count", "versions", "timestamp"} <= set(data)


def test_live_episodes_memory() -> None:
    data = live("echo", "--transport", "memory", "--live-episodes", "5")
    check_live(data, 5)
    assert data["rss_of"] == "this process"


@pytest.mark.integration
def test_live_episodes_atari_stdio_measures_the_server() -> None:
    data = live("atari", "--transport", "stdio", "--live-episodes", "4")
    check_live(data, 4)
    assert data["rss_of"] == "server process"
    table = runner.invoke(app, ["bench", "echo", "--transport", "memory", "--live-episodes", "2"])
    assert "every episode answered a step: 2/2" in table.stdout


@pytest.mark.integration
def test_startup_times_imports_stdio_and_a_worker() -> None:
    data = live("echo", "--startup", "--repeats", "1")
    assert data["repeats"] == 1 and data["python_s"] > 0
    assert set(data["import_s"]) == set(data["import_modules"]) and len(data["import_s"]) == 3
    assert all(n > 0 for n in data["import_modules"].values())
    assert all(t >= 0 for t in data["import_s"].values())  # timed inside each interpreter
    for name in (
        "stdio_first_initialize_s",
        "stdio_first_tools_list_s",
        "stdio_initialize_s",
        "stdio_tools_list_s",
        "stdio_first_reset_s",
        "worker_ready_s",
        "worker_first_env_s",
    ):
        assert isinstance(data[name], float) and data[name] > 0
    assert data["stdio_first_tools_list_s"] >= data["stdio_first_initialize_s"]
    assert data["stdio_tools_list_s"] >= data["stdio_initialize_s"]
    assert data["stdio_first_reset_s"] >= data["stdio_tools_list_s"]
    assert len(data["stdio_tools_list_s_repeats"]) == 3  # one per kind of stop
    assert set(data["stdio_exit_s"]) == {"stdin closed", "SIGINT", "SIGTERM"}
    assert data["worker_first_env_s"] >= data["worker_ready_s"]
    table = runner.invoke(app, ["bench", "echo", "--startup", "--repeats", "1"])
    assert "stdio: spawn -> initialize answered" in table.stdout
    assert "stdio: spawn -> tools/list answered" in table.stdout
    assert " -0." not in table.stdout


def test_cli_defaults_are_the_library_defaults() -> None:
    params = inspect.signature(bench).parameters
    assert params["steps"].default == DEFAULT_STEPS == BenchConfig("x").steps
    assert params["repeats"].default == DEFAULT_REPEATS
    assert params["warmup"].default == DEFAULT_WARMUP
    config = BenchConfig("x")
    assert (params["transport"].default, params["frames"].default) == (
        config.transport,
        config.frames,
    )
    # The bench measures what a trainer gets by default.
    assert config.frames == Session(memory_server("echo")).frames


@pytest.mark.parametrize(
    ("args", "batch"),
    [([], "1"), (["--concurrent"], "3"), ([], "3")],
)
def test_envs_whose_legal_actions_change_step_the_same_workload(
    args: list[str], batch: str
) -> None:
    # Tic-tac-toe: each step's legal actions are the empty cells (info["action_mask"]);
    # both sides pick the same legal action where their episode is.
    data = bench_json(
        "openspiel",
        "--game",
        "tic_tac_toe",
        "--transport",
        "memory",
        "--batch",
        batch,
        *args,
        "--frames",
        "none",
        *TINY,
    )
    assert data["raw_reward_total"] == data["mcp_reward_total"]
    assert data["raw_episodes_ended"] == data["mcp_episodes_ended"] > 0
