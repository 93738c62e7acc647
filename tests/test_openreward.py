"""The ``openreward`` client (ORS's own, from PyPI) reads our task sets over the
``--openenv`` face, unchanged: its ``Environment`` lists the splits, counts, lists and
fetches tasks of the echo env and of Gymnasium's CartPole, and a wrong index comes back
as the HTTP error it raises.

It cannot share our venv (it pins sse-starlette==2.3.6, mcp 2 needs 3.x), so it runs
from the side venv the set-up builds (scripts/setup_venv.py, ``SIDE``). It joins its
paths onto its base URL's host, so its base URL is our server's root and its
``variant`` ``openenv/NAME`` (paths ``/openenv/NAME/splits`` ...); before each call it
asks ``/create_session`` for a session (an SSE stream), which the face answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers import http_server
from tests.side_venv import run_side

pytestmark = pytest.mark.integration

#: Run by the side venv's Python: argv = root URL, env name; prints one JSON object.
SCRIPT = r"""
import json, sys
import aiohttp
from openreward import OpenReward

root, name = sys.argv[1], sys.argv[2]
client = OpenReward(api_key="local")
env = client.environments.get(name, variant=f"openenv/{name}", base_url=root)
out = {"splits": env.list_splits(), "counts": {}, "first": {}, "ranges": {}}
for split in out["splits"]:
    out["counts"][split] = env.num_tasks(split)
    task = env.get_task(split, 0)
    out["first"][split] = {"env": task.environment_name, "spec": task.task_spec}
    ranged = env.get_task_range(split, -2, None)
    out["ranges"][split] = [t.task_spec["id"] for t in ranged]
listed = env.list_tasks(out["splits"][-1])
out["listed"] = [t.task_spec["id"] for t in listed]
out["listed_env"] = sorted({t.environment_name for t in listed})
try:
    env.get_task(out["splits"][0], 10**6)
    out["error"] = None
except aiohttp.ClientResponseError as exc:
    out["error"] = {"status": exc.status, "message": exc.message}
client.close()
print(json.dumps(out))
"""


def read(root: str, name: str) -> Any:
    return run_side(SCRIPT, root, name, env={"OPENREWARD_DISABLE_UPDATE_CHECK": "1"})


def test_openreward_reads_the_echo_tasks() -> None:
    with http_server("echo", "--openenv") as url:
        out = read(url.removesuffix("/mcp"), "echo")
    assert out["splits"] == ["train", "test"]
    assert out["counts"] == {"train": 8, "test": 4}
    assert out["first"]["test"] == {
        "env": "echo",
        "spec": {
            "id": "echo-test-0",
            "seed": 0,
            "options": {"greeting": "bonjour"},
            "difficulty": "long",
            "data": {"greeting": "bonjour"},
        },
    }
    assert out["ranges"] == {
        "train": ["echo-train-6", "echo-train-7"],
        "test": ["echo-test-2", "echo-test-3"],
    }
    assert out["listed"] == [f"echo-test-{i}" for i in range(4)]
    assert out["listed_env"] == ["echo"]
    assert out["error"]["status"] == 400


def test_openreward_reads_cartpoles_tasks() -> None:
    with http_server("gymnasium", "--openenv", "--id", "CartPole-v1") as url:
        out = read(url.removesuffix("/mcp"), "gymnasium")
    assert out["splits"] == ["train", "validation", "test"]
    counts = out["counts"]
    assert all(isinstance(n, int) and n > 0 for n in counts.values()), counts
    for split, first in out["first"].items():
        assert first["env"] == "gymnasium"
        assert isinstance(first["spec"]["id"], str) and split in first["spec"]["id"]
        assert isinstance(first["spec"]["seed"], int)
    last = out["ranges"]["test"]
    assert len(last) == 2 and last[-1] != last[0]
    assert len(out["listed"]) == counts["test"]
    assert out["error"]["status"] == 400
