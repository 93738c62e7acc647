"""OpenEnv's Task API on the ``--openenv`` face, in memory (the HTTP app as ``serve
--http --openenv`` guards it): the env's task set listed and read, a task started by
OpenEnv's ``reset(split=, index=)`` over ``/reset`` and ``/ws`` and judged at its end,
and every wrong request refused with a status OpenEnv gives and a detail naming the
field and what came. Byte-compatibility with OpenEnv 0.10's own server is in
test_openenv_tasks_compat.py; the ``openreward`` client in tests/test_openreward.py."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.registry import env_names
from openenv_mcp.server import build_server, get_app
from openenv_mcp.server.faces import _openenv_tasks
from tests.door_env import DoorEnv
from tests.server.faces.test_openenv_routes import ORIGIN, client, openenv_app
from tests.servers import REQUIRED_OPTIONS

pytestmark = pytest.mark.anyio

ROUTES = ("tasks", "num_tasks", "task", "task_range")


@pytest.fixture
async def echo() -> AsyncIterator[Any]:
    server = build_server("echo")
    yield openenv_app(server)
    await get_app(server).aclose()


async def test_the_task_set_listed_counted_and_read(echo: Any) -> None:
    async with client(echo) as http:
        assert (await http.get("/openenv/list_environments")).json() == ["echo"]
        splits = (await http.get("/openenv/echo/splits")).json()
        assert splits == [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}]
        listed = (await http.post("/openenv/echo/tasks", json={"split": "test"})).json()
        assert listed["env_name"] == "echo"
        assert [t["id"] for t in listed["tasks"]] == [f"echo-test-{i}" for i in range(4)]
        assert listed["tasks"][1] == {
            "id": "echo-test-1",
            "seed": 1,
            "options": {"greeting": "howdy"},
            "difficulty": "short",
            "data": {"greeting": "howdy"},
        }
        count = await http.post("/openenv/echo/num_tasks", json={"split": "train"})
        assert count.json() == {"num_tasks": 8}
        one = (await http.post("/openenv/echo/task", json={"split": "test", "index": 1})).json()
        assert one == {"task": listed["tasks"][1], "env_name": "echo"}
        for start, stop in itertools.product((None, -9, -2, 0, 3, 8, 20), repeat=2):
            body = {"split": "train", "start": start, "stop": stop}
            got = (await http.post("/openenv/echo/task_range", json=body)).json()["tasks"]
            want = [f"echo-train-{i}" for i in range(8)][slice(start, stop)]
            assert [t["id"] for t in got] == want, body


async def test_a_task_starts_from_openenvs_reset_and_is_judged_at_its_end(echo: Any) -> None:
    async with client(echo) as http:
        reset = (await http.post("/openenv/reset", json={"split": "test", "index": 1})).json()
        observation = reset["observation"]
        assert observation["observation"] == "howdy"
        assert observation["task"] == {
            "id": "echo-test-1",
            "split": "test",
            "index": 1,
            "difficulty": "short",
            "data": {"greeting": "howdy"},
        }
        episode = observation["episode_id"]
        for message in ("howdy", "bye"):
            step = await http.post(
                "/openenv/step", json={"episode_id": episode, "action": {"action": message}}
            )
        end = step.json()
        assert end["done"] and end["observation"]["task"]["success"] is True
        wrong = await http.post("/openenv/reset", json={"split": "test", "index": 7})
        assert wrong.status_code == 422
        assert "split 'test' has 4 tasks (indices 0-3), got index 7" in wrong.json()["detail"]
        half = await http.post("/openenv/reset", json={"split": "test"})
        assert half.status_code == 422 and "needs both 'split'" in half.json()["detail"]


def test_a_task_starts_from_openenvs_reset_over_the_socket() -> None:
    server = build_server("echo")
    headers = {"host": "127.0.0.1:8765"}
    with (
        TestClient(openenv_app(server), base_url=ORIGIN) as http,
        http.websocket_connect("/openenv/ws", headers=headers) as ws,
    ):
        ws.send_json({"type": "reset", "data": {"split": "train", "index": 3}})
        data = ws.receive_json()["data"]
        assert data["observation"]["observation"] == "ahoy"
        assert data["observation"]["task"]["id"] == "echo-train-3"
        ws.send_json({"type": "step", "data": {"action": "bye"}})  # no echo: no success
        end = ws.receive_json()["data"]
        assert end["done"] and end["observation"]["task"]["success"] is False
        ws.send_json({"type": "reset", "data": {"task": "echo-test-2"}})  # ours: by id too
        assert ws.receive_json()["data"]["observation"]["observation"] == "good evening, friend"
        ws.send_json({"type": "reset", "data": {"split": "nope", "index": 0}})
        error = ws.receive_json()
        assert error["type"] == "error" and "no split 'nope'" in error["data"]["message"]


async def test_an_env_without_tasks_answers_501_as_openenv_does() -> None:
    server = build_server(DoorEnv)
    app = openenv_app(server)
    name = get_app(server).env_cls.name
    try:
        async with client(app) as http:
            assert (await http.get("/openenv/list_environments")).json() == [name]
            splits = await http.get(f"/openenv/{name}/splits")
            assert splits.status_code == 501
            assert splits.json()["detail"].startswith(
                "list_splits is not supported for this environment"
            )
            body = {"split": "test", "index": 0}
            for route, method in zip(
                ROUTES, ("list_tasks", "num_tasks", "get_task", "get_task_range"), strict=True
            ):
                fields = {k: body[k] for k in ("split", "index") if route == "task" or k == "split"}
                answer = await http.post(f"/openenv/{name}/{route}", json=fields)
                assert answer.status_code == 501, route
                assert f"{method} is not supported" in answer.json()["detail"]
            unknown = await http.get("/openenv/echo/splits")
            assert unknown.status_code == 404  # the name is checked first
    finally:
        await get_app(server).aclose()


#: Bodies a stranger sends, and what the detail must name.
HOSTILE: list[tuple[str, bytes, str]] = [
    ("task", b'{"split": "test", "index": true}', "field 'index' must be an integer, got bool"),
    ("task", b'{"split": "test", "index": 1.5}', "field 'index' must be an integer, got float"),
    ("task", b'{"split": "test", "index": null}', "field 'index' must be an integer, got"),
    ("task", b'{"split": null, "index": 0}', "field 'split' must be a string, got NoneType"),
    ("task", b'{"split": {"a": 1}, "index": 0}', "field 'split' must be a string, got dict"),
    ("task", b'{"split": "test", "index": 0, "task": "x"}', "unknown field ['task']"),
    ("task_range", b'{"split": "test", "start": false}', "field 'start' must be an integer or"),
    ("task_range", b'{"split": "test", "stop": "2"}', "field 'stop' must be an integer or null"),
    ("tasks", b"[" * 5000 + b"]" * 5000, "got no JSON"),
    ("tasks", b"\xff\xfe", "got no JSON"),
    ("tasks", b"42", "got int"),
    ("num_tasks", b'{"split": "x" }', "no split 'x'"),
    ("task", b'{"split": "test", "index": -5}', "got index -5"),
    ("task", b'{"split": "test", "index": 99999999999999999999999}', "got index 9999"),
    ("task", b'{"split": "train", "index": 8}', "split 'train' has 8 tasks (indices 0-7)"),
    ("tasks", b'{"split": "' + b"a" * 100_000 + b'"}', "no split 'aaaa"),
]


async def test_a_strangers_bodies_are_refused_naming_what_came(echo: Any) -> None:
    async with client(echo) as http:
        for route, raw, said in HOSTILE:
            answer = await http.post(f"/openenv/echo/{route}", content=raw)
            assert answer.status_code in (400, 422), (route, raw[:60])
            detail = answer.json()["detail"]
            assert said in detail, (route, raw[:60], detail)
            assert len(detail) < 5000  # an echoed argument is cut, never sent back whole
        # nothing of it touched the server: it answers on
        ok = await http.post("/openenv/echo/num_tasks", json={"split": "test"})
        assert ok.json() == {"num_tasks": 4}
        assert (await http.get("/openenv/echo/tasks")).status_code == 405
        assert (await http.post("/openenv/echo/splits")).status_code == 405


async def test_a_listing_past_the_cap_says_to_read_ranges(
    echo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_openenv_tasks, "MAX_LISTED", 3)
    async with client(echo) as http:
        listed = await http.post("/openenv/echo/tasks", json={"split": "test"})
        assert listed.status_code == 400
        assert "an answer lists at most 3 (got a range of 4)" in listed.json()["detail"]
        assert "task_range" in listed.json()["detail"]
        ranged = await http.post("/openenv/echo/task_range", json={"split": "test", "stop": 3})
        assert len(ranged.json()["tasks"]) == 3


async def test_the_openapi_document_declares_the_task_routes(echo: Any) -> None:
    async with client(echo) as http:
        paths = (await http.get("/openenv/openapi.json")).json()["paths"]
    for route in ROUTES:
        post = paths[f"/{{env_name}}/{route}"]["post"]
        assert post["tags"] == ["Task API"]
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        assert "split" in schema["required"] and schema["additionalProperties"] is False
    assert "get" in paths["/{env_name}/splits"] and "get" in paths["/list_environments"]


async def test_the_openreward_clients_sessions_hold_nothing(echo: Any) -> None:
    async with client(echo) as http:
        made = await http.post("/create_session", json={})
        assert made.headers["content-type"].startswith("text/event-stream")
        lines = made.text.splitlines()
        assert lines[0] == "event: task_id" and lines[1].startswith("data: ors_")
        assert lines[3:5] == ["event: end", "data: "]
        again = (await http.post("/create_session")).text.splitlines()[1]
        assert again != lines[1]
        deleted = await http.post("/delete_session", headers={"X-Session-ID": lines[1][6:]})
        assert deleted.json() == {"status": "ok"}


async def test_the_token_guards_the_task_routes() -> None:
    server = build_server("echo")
    app = openenv_app(server, token="s3cret")
    try:
        async with client(app) as http:
            refused = await http.get("/openenv/echo/splits")
            assert refused.status_code == 401
            assert (await http.post("/create_session")).status_code == 401
            ok = await http.get("/openenv/echo/splits", auth=("any", "s3cret"))
            assert ok.status_code == 200
    finally:
        await get_app(server).aclose()


def _same_start(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Two resets' OpenEnv observations: ours (its ``observation``; the text names the
    episode), or a namesake model's, the episode's handle aside."""
    if "observation" in first:
        return bool(first["observation"] == second["observation"])
    return {k: v for k, v in first.items() if k != "episode_id"} == {
        k: v for k, v in second.items() if k != "episode_id"
    }


def _equal(a: Any, b: Any) -> bool:
    """Observations equal exactly: arrays element for element, dicts key by key."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


@pytest.mark.integration  # chess's engine and coding's sandbox are processes
@pytest.mark.parametrize("env", [e for e in env_names() if e != "openenv"])
async def test_every_bundled_env_serves_its_tasks_over_mcp_and_openenv(env: str) -> None:
    server = build_server(env, **REQUIRED_OPTIONS.get(env, {}))
    app = get_app(server)
    try:
        first = app.spec.splits[-1]  # the test split, where there is one
        split, name = str(first["name"]), env
        async with MCPEnvClient(server) as mcp:
            tasks = await mcp.tasks(split)
            assert len(tasks) == first["tasks"] > 0
            starts = [await mcp.reset(options={"split": split, "index": 0}) for _ in range(2)]
            assert starts[0][1]["task"]["id"] == tasks[0].id == starts[1][1]["task"]["id"]
            # the same first observation, exactly (arrays and text alike)
            assert _equal(starts[0][0], starts[1][0])
        async with client(openenv_app(server)) as http:
            splits = (await http.get(f"/openenv/{name}/splits")).json()
            assert {"name": split, "type": first["type"]} in splits
            task = await http.post(f"/openenv/{name}/task", json={"split": split, "index": 0})
            assert task.json()["task"] == tasks[0].to_json()
            resets = [
                (await http.post("/openenv/reset", json={"split": split, "index": 0})).json()
                for _ in range(2)
            ]
            assert _same_start(resets[0]["observation"], resets[1]["observation"])
    finally:
        await app.aclose()
