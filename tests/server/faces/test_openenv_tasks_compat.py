"""Our ``--openenv`` face's Task API against the real OpenEnv 0.10: the same requests to
OpenEnv's own server (``create_app``, tests/openenv_task_app.py, over the echo env's
tasks) and to ours (``serve echo --http --openenv``) answer the same bytes, but for the
documented differences; and OpenEnv 0.10's own client, from its side venv, starts a task
on our server with ``reset(split=, index=)`` and plays it to success.

OpenEnv 0.10 needs fastmcp<4, so it runs from the side venv the set-up builds
(scripts/setup_venv.py, ``SIDE``); each server starts once for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.servers import http_server
from tests.side_venv import echo_tasks_spec, run_side, task_server

pytestmark = pytest.mark.integration

TIMEOUT = httpx.Timeout(30.0)


@pytest.fixture(scope="module")
def reference() -> Iterator[str]:
    with task_server(echo_tasks_spec()) as base:
        yield base


@pytest.fixture(scope="module")
def ours() -> Iterator[str]:
    with http_server("echo", "--openenv") as url:
        yield url.removesuffix("/mcp") + "/openenv"


def _both(reference: str, ours: str, method: str, path: str, **kw: Any) -> tuple[Any, Any]:
    with httpx.Client(timeout=TIMEOUT) as http:
        return (
            http.request(method, reference + path, **kw),
            http.request(method, ours + path, **kw),
        )


#: Requests answered 200, and whether ours adds ``env_name`` (the documented superset:
#: ORS's server sends it on /task and /task_range, and its client reads it there).
SAME: list[tuple[str, str, Any, bool]] = [
    ("GET", "/list_environments", None, False),
    ("GET", "/echo/splits", None, False),
    ("GET", "/ECHO/splits", None, False),  # the name compared without case
    ("POST", "/echo/tasks", {"split": "train"}, False),
    ("POST", "/Echo/tasks", {"split": "test"}, False),
    ("POST", "/echo/num_tasks", {"split": "train"}, False),
    ("POST", "/echo/num_tasks", {"split": "test"}, False),
    *(("POST", "/echo/task", {"split": "train", "index": i}, True) for i in range(8)),
    *(("POST", "/echo/task", {"split": "test", "index": i}, True) for i in range(4)),
    ("POST", "/echo/task_range", {"split": "train"}, True),
    ("POST", "/echo/task_range", {"split": "train", "start": None, "stop": None}, True),
    ("POST", "/echo/task_range", {"split": "train", "start": 2}, True),
    ("POST", "/echo/task_range", {"split": "train", "stop": 3}, True),
    ("POST", "/echo/task_range", {"split": "train", "start": -3}, True),
    ("POST", "/echo/task_range", {"split": "train", "start": 1, "stop": -1}, True),
    ("POST", "/echo/task_range", {"split": "train", "start": -100, "stop": 100}, True),
    ("POST", "/echo/task_range", {"split": "train", "start": 5, "stop": 2}, True),
    ("POST", "/echo/task_range", {"split": "test", "start": 4, "stop": 9}, True),
]


def test_every_route_answers_openenvs_bytes(reference: str, ours: str) -> None:
    for method, path, body, adds_env_name in SAME:
        theirs, mine = _both(reference, ours, method, path, json=body)
        where = f"{method} {path} {body}"
        assert (theirs.status_code, mine.status_code) == (200, 200), where
        assert mine.headers["content-type"] == theirs.headers["content-type"], where
        expected = theirs.content
        if adds_env_name:
            assert expected.endswith(b"}")
            expected = expected[:-1] + b',"env_name":"echo"}'
        assert mine.content == expected, where


#: Requests refused: OpenEnv's status, with our own detail (naming the field and what
#: came, where OpenEnv's is pydantic's list or "Invalid task index").
REFUSED: list[tuple[str, str, Any, int]] = [
    ("GET", "/nope/splits", None, 404),
    ("POST", "/nope/tasks", {"split": "test"}, 404),
    ("POST", "/nope/task", {"split": "test", "index": 0}, 404),
    ("POST", "/echo/task", {"split": "test", "index": 4}, 400),
    ("POST", "/echo/task", {"split": "test", "index": 10**30}, 400),
    ("POST", "/echo/task", {"split": "test", "index": -1}, 400),
    ("POST", "/echo/task", {"split": "tset", "index": 0}, 400),
    ("POST", "/echo/num_tasks", {"split": "tset"}, 400),
    ("POST", "/echo/tasks", {}, 422),
    ("POST", "/echo/task", {"split": "test"}, 422),
    ("POST", "/echo/task", {"index": 0}, 422),
    ("POST", "/echo/tasks", {"split": "test", "extra": 1}, 422),
    ("POST", "/echo/task_range", {"split": "test", "step": 2}, 422),
    ("POST", "/echo/tasks", {"split": 3}, 422),
    ("POST", "/echo/task", {"split": "test", "index": [1]}, 422),
    ("POST", "/echo/task_range", {"split": "test", "start": "a"}, 422),
    ("POST", "/echo/tasks", ["test"], 422),
    ("POST", "/nope/tasks", {"split": 3}, 422),  # the body is checked first, as FastAPI does
]


def test_refusals_have_openenvs_status_and_say_what_came(reference: str, ours: str) -> None:
    for method, path, body, status in REFUSED:
        theirs, mine = _both(reference, ours, method, path, json=body)
        where = f"{method} {path} {body}"
        assert (theirs.status_code, mine.status_code) == (status, status), where
        detail = mine.json()["detail"]
        assert isinstance(detail, str) and detail, where
    for raw in (b"{", b"", b"null", b'"split"'):
        theirs, mine = _both(reference, ours, "POST", "/echo/tasks", content=raw)
        assert (theirs.status_code, mine.status_code) == (422, 422), raw
        assert "expected a JSON object {split} as the body" in mine.json()["detail"]
    # OpenEnv's words for an unknown name, then ours: which name this server answers to
    theirs, mine = _both(reference, ours, "GET", "/nope/splits")
    assert theirs.json() == {"detail": "unknown environment 'nope'"}
    assert mine.json() == {"detail": "unknown environment 'nope'; this server serves 'echo'"}


def test_where_openenv_is_lax_ours_refuses_and_says_why(reference: str, ours: str) -> None:
    """pydantic's lax mode takes "1" and 1.0 for an index; ours wants an integer."""
    for index in ("1", 1.0):
        body = {"split": "test", "index": index}
        theirs, mine = _both(reference, ours, "POST", "/echo/task", json=body)
        assert theirs.status_code == 200
        assert mine.status_code == 422
        assert "field 'index' must be an integer, got" in mine.json()["detail"]


#: OpenEnv 0.10's own clients, run from its side venv against our server.
CLIENT = r"""
import json, sys
import httpx
from openenv.core.generic_client import GenericEnvClient

base = sys.argv[1]
out = {}
with GenericEnvClient(base_url=base).sync() as env:
    first = env.reset(split="test", index=1)
    out["reset"] = first.observation
    env.step({"action": "howdy"})
    last = env.step({"action": "bye"})
    out["end"] = {"observation": last.observation, "done": last.done, "reward": last.reward}
# OpenEnv 0.10's one Task API client (openenv.harbor.client.HarborEnv) is plain httpx on
# /harbor_env/...: the same calls, on this server's name.
with httpx.Client(base_url=base, timeout=30) as http:
    name = http.get("/list_environments").json()[0]
    out["splits"] = http.get(f"/{name}/splits").json()
    out["num_tasks"] = http.post(f"/{name}/num_tasks", json={"split": "test"}).json()
    out["range"] = http.post(
        f"/{name}/task_range", json={"split": "test", "start": 1, "stop": None}
    ).json()
print(json.dumps(out))
"""


def test_openenvs_client_starts_a_task_and_plays_it_to_success(ours: str) -> None:
    out = run_side(CLIENT, ours)
    task = out["reset"]["task"]
    assert (task["id"], task["split"], task["index"]) == ("echo-test-1", "test", 1)
    assert out["reset"]["observation"] == "howdy"
    end = out["end"]
    assert end["done"] is True and end["observation"]["task"]["success"] is True
    assert out["splits"] == [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}]
    assert out["num_tasks"] == {"num_tasks": 4}
    assert [t["id"] for t in out["range"]["tasks"]] == ["echo-test-1", "echo-test-2", "echo-test-3"]
    assert out["range"]["env_name"] == "echo"
    json.dumps(out)  # all of it JSON, as it came
