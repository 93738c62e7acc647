"""Tasks from every face of the client: the async and sync clients list them, and the
Gymnasium and vector adapters start them with Gymnasium's own ``reset(options=...)``."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_mcp.client import MCPEnvClient, MCPVectorEnv
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server import build_server


def test_the_sync_client_lists_tasks_and_reads_the_servers_counts() -> None:
    with MCPEnvClient(build_server("echo")).sync() as env:
        assert [s["name"] for s in env.splits] == ["train", "test"]
        tasks = env.tasks("test")
        assert [t.id for t in tasks] == [f"echo-test-{i}" for i in range(4)]
        env.reset(options={"task": tasks[0].id})
        env.step(tasks[0].data["greeting"])
        *_, info = env.step("bye")
        assert info["task"]["success"] is True
        assert env.task_stats()["tasks"] == {"echo-test-0": {"n": 1, "successes": 1}}


def test_the_gymnasium_adapter_starts_a_task_and_reports_its_judgement_in_info() -> None:
    env = MCPEnvClient(build_server("echo")).as_gym()
    try:
        obs, info = env.reset(options={"split": "train", "index": 1})
        assert obs == "hello" and info["task"]["id"] == "echo-train-1"
        *_, terminated, _, info = env.step("bye")
        assert terminated and info["task"]["success"] is False
        again, _ = env.reset(options={"split": "train", "index": 1})
        assert again == obs
    finally:
        env.close()


def test_the_vector_adapter_starts_one_task_per_episode() -> None:
    envs = MCPVectorEnv(build_server("echo"), num_envs=3)
    try:
        obs, info = envs.reset(seed=4, options={"split": "test", "index": [3, 2, 1]})
        assert list(obs) == ["hallo", "good evening, friend", "howdy"]
        assert list(info["task"]["id"]) == ["echo-test-3", "echo-test-2", "echo-test-1"]
        obs, _ = envs.reset(options={"split": "test", "index": 0})
        assert list(obs) == ["bonjour"] * 3  # the same task in every episode: samples
        with pytest.raises(ArgumentError, match=r"one per episode \(3\), got 2"):
            envs.reset(options={"split": "test", "index": [0, 1]})
        _, _, terminated, _, _ = envs.step(np.array(["bye", "x", "bonjour"], dtype=object))
        assert list(terminated) == [True, False, False]
    finally:
        envs.close()
