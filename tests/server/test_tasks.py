"""The task set over MCP, on every transport: the splits and pages of tasks as resources,
a reset that starts a task, each task's running counts, and ``serve --task``; and what
a stranger gets for every wrong resource or option."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError, UnknownTask, UnsupportedOption
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.server._tasks import PAGE_SIZE, task_page
from openenv_mcp.tasks import SeedTasks
from tests.servers import LEAKS, TRANSPORTS, open_client

pytestmark = pytest.mark.anyio


async def read(client: Client, uri: str) -> Any:
    contents = await client.read_resource(uri)
    return json.loads(contents[0].text)  # type: ignore[union-attr]


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_tasks_are_listed_read_started_and_counted_over_every_transport(
    transport: str,
) -> None:
    with anyio.fail_after(90):
        async with open_client(transport) as client:
            uris = {str(r.uri) for r in await client.list_resources()}
            assert {"openenv://echo/tasks", "openenv://echo/task-stats"} <= uris
            templates = {t.uriTemplate for t in await client.list_resource_templates()}
            assert "openenv://echo/tasks/{split}/{page}" in templates
            index = await read(client, "openenv://echo/tasks")
            assert index["splits"] == [
                {"name": "train", "type": "train", "tasks": 8},
                {"name": "test", "type": "test", "tasks": 4},
            ]
            page = await read(client, "openenv://echo/tasks/test/0")
            assert [t["id"] for t in page["tasks"]] == [f"echo-test-{i}" for i in range(4)]
            assert page["next"] is None and page["total"] == 4
            assert page["tasks"][1] == {
                "id": "echo-test-1",
                "seed": 1,
                "options": {"greeting": "howdy"},
                "difficulty": "short",
                "data": {"greeting": "howdy"},
            }

            opened = await call(client, "reset", options={"split": "test", "index": 1})
            handle = opened["episode_id"]
            assert opened["observation"] == "howdy" and opened["task"]["id"] == "echo-test-1"
            await call(client, "step", episode_id=handle, action="howdy")
            ended = await call(client, "step", episode_id=handle, action="bye")
            assert ended["task"]["success"] is True
            await call(client, "reset", episode_id=handle, options={"task": "echo-test-1"})
            ended = await call(client, "step", episode_id=handle, action="bye")
            assert ended["task"]["success"] is False
            stats = await read(client, "openenv://echo/task-stats")
            assert stats["tasks"]["echo-test-1"] == {"n": 2, "successes": 1}


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("openenv://echo/tasks/test/1", "1 page of 100 (pages 0-0), got page 1"),
        ("openenv://echo/tasks/test/99999999999", "a page is a number from 0"),
        ("openenv://echo/tasks/test/-1", "a page is a number from 0"),
        ("openenv://echo/tasks/validation/0", "no split 'validation'. Splits: train, test"),
        ("openenv://echo/tasks/tset/0", "Did you mean 'test'"),
    ],
)
async def test_a_wrong_page_or_split_is_refused_saying_what_there_is(uri: str, words: str) -> None:
    async with Client(build_server("echo")) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        assert words in str(caught.value)
        assert not any(leak in str(caught.value) for leak in LEAKS)
        # and the server goes on
        assert (await read(client, "openenv://echo/tasks"))["splits"]


@pytest.mark.integration
async def test_the_client_reads_a_split_whole_over_stdio() -> None:
    async with MCPEnvClient("openenv-mcp serve echo") as env:
        assert [t.id for t in await env.tasks("train")] == [f"echo-train-{i}" for i in range(8)]


def test_a_split_of_many_pages_is_paged_with_each_next_uri() -> None:
    tasks = SeedTasks("big", lambda e: True, sizes={"test": 2 * PAGE_SIZE + 5})
    pages = [task_page(tasks, "big", "test", p) for p in range(3)]
    assert [len(p["tasks"]) for p in pages] == [PAGE_SIZE, PAGE_SIZE, 5]
    assert pages[0]["next"] == "openenv://big/tasks/test/1" and pages[2]["next"] is None


async def test_an_env_without_tasks_lists_no_task_resources_and_refuses_task_options() -> None:
    async with MCPEnvClient(build_server("tests.door_env:DoorEnv")) as env:
        assert env.splits == []
        with pytest.raises(UnknownTask, match="publishes no tasks"):
            await env.tasks("test")
        with pytest.raises(UnsupportedOption, match="publishes no tasks"):
            await env.reset(options={"split": "test", "index": 0})
        uris = {
            str(r["uri"])
            for r in (await env.session.transport.request("resources/list"))["resources"]
        }
        assert not any("tasks" in uri or "task-stats" in uri for uri in uris)


async def test_serve_task_starts_it_on_resets_that_name_none() -> None:
    server = build_server("echo", settings=ServerSettings(task="echo-test-2", seed=9))
    async with MCPEnvClient(server) as env:
        obs, info = await env.reset()
        assert obs == "good evening, friend" and info["task"]["id"] == "echo-test-2"
        obs, info = await env.reset(options={"task": "echo-train-1"})  # its own task wins
        assert obs == "hello" and "seed" not in info
        obs, info = await env.reset(seed=3)  # a seed names an episode, not the task
        assert obs == "" and "task" not in info
    with pytest.raises(ArgumentError, match="--task nope: no task 'nope'"):
        build_server("echo", settings=ServerSettings(task="nope"))
    with pytest.raises(ArgumentError, match="--task x: door publishes no tasks"):
        build_server("tests.door_env:DoorEnv", settings=ServerSettings(task="x"))
