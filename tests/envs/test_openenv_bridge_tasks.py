"""The OpenEnv bridge passes an OpenEnv environment's own tasks through (its Task API):
over ``--url`` from a real OpenEnv 0.10 server (``create_app`` in the side venv: it needs
fastmcp<4), read lazily a page at a time, and with ``--env`` from the class's methods in
process. A task starts the remote's with ``reset(split=, index=)`` (our options
``remote_split``/``remote_index``), and succeeds where the remote ends it with a reward
above 0 (OpenEnv 0.10 has no success rule of its own: a rubric scores)."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fastmcp import Client

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.server import build_server
from openenv_mcp_envs.openenv import _tasks
from openenv_mcp_envs.openenv import env as env_module
from openenv_mcp_envs.openenv.env import OpenEnvConfig, OpenEnvEnv
from tests.side_venv import echo_tasks_spec, task_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LOCAL = "tests.openenv_task_env:TaskEchoEnv"


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    with task_server(echo_tasks_spec("taskecho")) as base:
        yield base


@pytest.fixture(scope="module")
def local_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The in-process class's tasks file (its ``spec()`` reads it once per process)."""
    path: Path = tmp_path_factory.mktemp("tasks") / "tasks.json"
    path.write_text(json.dumps(echo_tasks_spec("taskecho")))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENENV_TASKS", str(path))
        yield


def _config(source: str) -> dict[str, Any]:
    return {"url": source} if source.startswith("http") else {"env": source}


@pytest.fixture(params=["url", "env"])
def source(request: pytest.FixtureRequest) -> str:
    if request.param == "url":
        return str(request.getfixturevalue("remote"))
    request.getfixturevalue("local_tasks")
    return LOCAL


async def test_a_remote_task_is_started_and_judged(source: str) -> None:
    async with MCPEnvClient(build_server("openenv", **_config(source))) as env:
        observation, info = await env.reset(options={"split": "test", "index": 1})
        assert observation["message"] == "howdy"
        assert observation["task_id"] == "echo-test-1"  # the remote's own task started
        task = info["task"]
        assert (task["id"], task["split"], task["index"]) == ("test-0001", "test", 1)
        assert task["data"]["id"] == "echo-test-1"  # what the remote says of it
        assert task["difficulty"] == "short"
        await env.step({"message": "howdy"})
        *_, terminated, _, info = await env.step({"message": "bye"})
        assert terminated and info["final_reward"] == 1.0
        assert info["task"]["success"] is True
        # the same task, its greeting not echoed: the remote's final reward is 0
        await env.reset(options={"task": "test-0001"})
        *_, info = await env.step({"message": "bye"})
        assert info["final_reward"] == 0.0 and info["task"]["success"] is False


async def test_the_splits_and_tasks_are_the_remotes(source: str) -> None:
    async with Client(build_server("openenv", **_config(source))) as client:
        tools = {t.name: t for t in await client.list_tools()}
        options = tools["reset"].input_schema["properties"]["options"]["anyOf"][0]
        assert {"split", "index", "task", "remote_split", "remote_index"} <= set(
            options["properties"]
        )
        wrong = await client.call_tool(
            "reset", {"options": {"split": "test", "index": 4}}, raise_on_error=False
        )
        assert wrong.is_error
        assert "split 'test' has 4 tasks (indices 0-3), got index 4" in str(wrong.content)
        # the remote's split and index by our option names, without a task of ours
        plain = await client.call_tool(
            "reset", {"options": {"remote_split": "train", "remote_index": 2}}
        )
        assert plain.structured_content["observation"]["message"] == "good morning"
        assert "task" not in plain.structured_content
    task_set = OpenEnvEnv(OpenEnvConfig(**_config(source))).task_set()
    assert task_set is not None and task_set.check() == []
    assert [(s.name, s.type) for s in task_set.splits()] == [("train", "train"), ("test", "test")]
    assert [len(task_set.tasks(s.name)) for s in task_set.splits()] == [8, 4]
    assert task_set.locate("train-0007")[2].data["id"] == "echo-train-7"
    with pytest.raises(UnknownTask, match="this set's ids are SPLIT-NNNN"):
        task_set.locate("train-0008")


def test_tasks_are_read_a_page_at_a_time(remote: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tasks, "PAGE", 3)
    task_set = _tasks.RemoteTasks.read(remote, 10.0, _limits())
    assert task_set is not None
    reads: list[tuple[str, int, int]] = []
    real = task_set._range

    def counted(split: str, start: int, stop: int) -> list[Any]:
        reads.append((split, start, stop))
        return real(split, start, stop)

    monkeypatch.setattr(task_set, "_range", counted)
    train = task_set.tasks("train")
    assert [train[i].data["id"] for i in (0, 2, 7, 1)] == [
        "echo-train-0",
        "echo-train-2",
        "echo-train-7",
        "echo-train-1",
    ]
    assert reads == [("train", 0, 3), ("train", 6, 8)]  # the first page kept
    assert [t.id for t in train[5:8]] == ["train-0005", "train-0006", "train-0007"]
    assert reads[2:] == [("train", 3, 6)]  # a slice reads the pages it spans, once each


def _limits() -> Any:
    from openenv_mcp_envs.openenv.env import _limits as limits

    return limits(OpenEnvConfig(url="http://127.0.0.1:1"))


async def test_a_source_without_tasks_has_none() -> None:
    env = OpenEnvEnv(OpenEnvConfig(env="tests.openenv_envs:CountEnvironment"))
    try:
        assert env.task_set() is None
        assert "remote_split" not in (env.Options.model_fields if env.Options else {})
    finally:
        env.close()


class _Hostile(http.server.BaseHTTPRequestHandler):
    """A Task API that answers what ``answers`` says: path -> (status, JSON body)."""

    answers: ClassVar[dict[str, tuple[int, Any]]] = {}

    def _answer(self) -> None:
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = self.answers.get(self.path, (404, {"detail": "Not Found"}))
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:  # quiet: stderr is the test's
        pass


@pytest.fixture
def hostile() -> Iterator[dict[str, tuple[int, Any]]]:
    answers: dict[str, tuple[int, Any]] = {}
    handler = type("Handler", (_Hostile,), {"answers": answers})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    answers["base"] = (0, f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield answers
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_hostile_task_api_is_named_or_left_out(
    hostile: dict[str, tuple[int, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    base = str(hostile.pop("base")[1])
    read = functools.partial(_tasks.RemoteTasks.read, base, 5.0, _limits())
    assert read() is None  # no Task API (an older OpenEnv): 404
    hostile["/list_environments"] = (200, ["bad"])
    hostile["/bad/splits"] = (501, {"detail": "list_splits is not supported"})
    assert read() is None
    hostile["/bad/splits"] = (500, b"Internal Server Error")
    with pytest.raises(ArgumentError, match=r"answered GET /bad/splits with 500: Internal"):
        read()
    key = (base, None, "{}")
    config = OpenEnvConfig(url=base)
    try:  # the bridge serves on without tasks, and says why
        assert env_module._tasks(config, None) is None
    finally:
        env_module._task_sets.pop(key, None)
    assert "its Task API could not be read, so it is served without tasks" in caplog.text
    splits = [{"name": "a b", "type": "test"}, {"name": "x", "type": "weird"}, "y"]
    hostile["/bad/splits"] = (200, splits)
    task_set = read()
    assert task_set is not None
    assert [(s.name, s.type) for s in task_set.splits()] == [("x", "validation")]
    hostile["/bad/num_tasks"] = (200, {"num_tasks": "many"})
    with pytest.raises(ArgumentError, match=r"num_tasks\('x'\) answered 'many', not a count"):
        task_set.tasks("x")
    hostile["/bad/num_tasks"] = (200, {"num_tasks": 3})
    hostile["/bad/task_range"] = (200, {"tasks": [{"id": 1}]})
    with pytest.raises(ArgumentError, match=r"answered 1 tasks, expected 3"):
        task_set.tasks("x")[0]
    hostile["/bad/task_range"] = (400, {"detail": "Invalid task index"})
    with pytest.raises(UnknownTask, match="Invalid task index"):
        task_set.tasks("x")[2]
    hostile["/bad/task_range"] = (200, {"tasks": ["a", None, {"difficulty": 3}]})
    made = list(task_set.tasks("x"))
    assert [t.data for t in made] == [{"task": "a"}, {"task": None}, {"difficulty": 3}]
    assert made[2].difficulty is None  # not a label: left in data only
