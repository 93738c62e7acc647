"""The ``evaluate`` tool: an eval of the random policy run inside the server, over MCP,
on echo's tasks; listed for trainers, not agents; attacked; never in other clients' way."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from fastmcp import Client

from openenv_mcp.client import Session
from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.server.tools import _evaluate
from tests.servers import serve_target

pytestmark = pytest.mark.anyio
WAIT = 120


@pytest.mark.parametrize(
    "transport", ["memory", pytest.param("stdio", marks=pytest.mark.integration)]
)
async def test_evaluate_answers_the_report_and_its_table(transport: str) -> None:
    with serve_target(transport) as target, anyio.fail_after(WAIT):
        async with Session(target) as session:
            answer = await session.call(
                "evaluate", {"split": "test", "samples": 3, "k": [1, 3], "max_steps": 4}
            )
            report = answer.structured
            assert report is not None
    assert report["config"]["dataset"]["task_ids"] == [f"echo-test-{i}" for i in range(4)]
    parameters = report["config"]["eval_parameters"]
    assert parameters["samples"] == 3 and parameters["k"] == [1, 3]
    assert parameters["policy"] == "random" and parameters["max_steps"] == 4
    assert set(report["scores"]["per_task"]) == {f"echo-test-{i}" for i in range(4)}
    assert "pass@3" in report["scores"] and "pass@3" in answer.text
    assert "4 x 3 = 12 runs" in answer.text
    json.dumps(report, allow_nan=False)  # JSON as MCP carries it


async def test_its_episodes_are_closed_after_each_run() -> None:
    """Twelve runs, four at a time, on a server that holds six episodes: none is refused
    (every run ends, truncated at echo's 100 steps, with no error)."""
    server = build_server("echo", settings=ServerSettings(max_episodes=6))
    with anyio.fail_after(WAIT):
        async with Session(server) as session:
            report = (
                await session.call("evaluate", {"split": "test", "samples": 3, "max_steps": 200})
            ).structured or {}
            assert report["scores"]["error_rate"] == 0.0
            await session.episode().reset()  # room left for a client


async def test_the_same_call_gives_the_same_report() -> None:
    args = {"split": "train", "samples": 2, "limit": 3, "max_steps": 3, "seed": 5}
    with serve_target("memory") as server, anyio.fail_after(WAIT):
        async with Session(server) as session:
            first = (await session.call("evaluate", args)).structured or {}
            second = (await session.call("evaluate", args)).structured or {}
    assert first["scores"] == second["scores"]
    assert first["config"]["dataset"]["tasks"] == 3


async def test_listed_for_trainers_not_for_agents() -> None:
    for profile, listed in (("full", True), ("agent", False)):
        server = build_server("echo", settings=ServerSettings(profile=profile))
        async with Client(server) as client:
            tools = {t.name: t for t in await client.list_tools()}
        assert ("evaluate" in tools) is listed, profile
    schema = tools_schema()
    assert schema["properties"]["split"]["enum"] == ["train", "test"]
    assert schema["additionalProperties"] is False


def tools_schema() -> dict[str, Any]:
    app_tools = {t.name: t for t in _tools_of(build_server("echo"))}
    return dict(app_tools["evaluate"].parameters)


def _tools_of(server: Any) -> list[Any]:
    from openenv_mcp.server import get_app

    return list(get_app(server).tools)


@pytest.mark.parametrize(
    ("args", "error", "says"),
    [
        ({"split": "valid"}, UnknownTask, "no split 'valid' in echo"),
        ({"split": "test", "policy": "my.py:greedy"}, ArgumentError, "it runs random"),
        ({"split": "test", "policy": "claude -p {mcp_config}"}, ArgumentError, "not run in"),
        ({"split": "test", "samples": 2, "k": [4]}, ArgumentError, "between 1 and samples (2)"),
        ({"split": "test", "samples": 0}, ArgumentError, "samples"),
        ({"split": "test", "samples": 101}, ArgumentError, "samples"),
        ({"split": "test", "max_steps": 0}, ArgumentError, "max_steps"),
        ({"split": "test", "limit": -1}, ArgumentError, "limit"),
        ({"split": "test", "k": "1,2"}, ArgumentError, "k"),
        ({"split": "test", "surprise": 1}, ArgumentError, "surprise"),
        ({}, ArgumentError, "split"),
    ],
)
async def test_bad_arguments_are_refused_clearly(
    args: dict[str, Any], error: type[Exception], says: str
) -> None:
    with serve_target("memory") as server, anyio.fail_after(WAIT):
        async with Session(server) as session:
            with pytest.raises(error, match=None) as raised:
                await session.call("evaluate", args)
            assert says in str(raised.value)
            # The server goes on.
            assert (await session.call("reset", {"new_episode": True})).structured


async def test_too_many_runs_are_refused_naming_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_evaluate, "MAX_RUNS", 10)
    with serve_target("memory") as server, anyio.fail_after(WAIT):
        async with Session(server) as session:
            with pytest.raises(ArgumentError, match=r"8 tasks x 2 samples is 16 runs; .* 10"):
                await session.call("evaluate", {"split": "train", "samples": 2})
            answer = await session.call("evaluate", {"split": "train", "samples": 2, "limit": 5})
    assert (answer.structured or {})["config"]["dataset"]["tasks"] == 5


async def test_another_client_steps_while_an_eval_runs() -> None:
    server = build_server("echo")
    with anyio.fail_after(WAIT):
        async with Session(server) as evaluator, Session(server) as player:
            episode = player.episode()
            await episode.reset(options={"split": "test", "index": 0})
            done = anyio.Event()
            during = 0

            async def run_eval() -> None:
                await evaluator.call("evaluate", {"split": "train", "samples": 20, "max_steps": 50})
                done.set()

            async with anyio.create_task_group() as group:
                group.start_soon(run_eval)
                for _ in range(5):
                    await episode.step("hi")
                    during += not done.is_set()
            assert during >= 1 and done.is_set()
            _, _, _, _, info = await episode.step("bye")
            # The player's own episode, untouched: its task, judged at its end.
            assert info["task"]["id"] == "echo-test-0" and "success" in info["task"]
