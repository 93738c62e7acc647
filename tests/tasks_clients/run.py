"""Running the MCP Tasks clients that live outside our venv, each as the process it is:
fastmcp-tasks' client (:mod:`tests.tasks_clients.fastmcp_tasks_client`, by its side
venv's Python) and the ext-tasks requester (tests/node/ext_tasks_requester.mjs, by the
Node 22 of scripts/ensure_ext_tasks.sh). Both take ``URL ACTION TOOL ARGS_JSON`` and
print one JSON answer; both are installed by the project's own set-up, and a test using
them skips only when that install cannot happen here (saying why)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.servers import ROOT, ensure_installed
from tests.side_venv import side_python

#: The side venv of fastmcp-tasks (scripts/setup_venv.py ``SIDE``).
SIDE = "fastmcp-tasks-4.1"
FASTMCP_TASKS_CLIENT = Path(__file__).with_name("fastmcp_tasks_client.py")
EXT_TASKS_REQUESTER = ROOT / "tests" / "node" / "ext_tasks_requester.mjs"
#: The clients by name, as tests parametrize over them.
CLIENTS = ("fastmcp-tasks", "ext-tasks")
#: A client's whole run (its own waits are bounded at 120 s each).
RUN_TIMEOUT = 300.0


@functools.cache
def fastmcp_tasks_python() -> Path:
    """The side venv's interpreter (built once by the project's set-up; skips where the
    install cannot happen)."""
    return side_python(SIDE)


@functools.cache
def ext_tasks_tools() -> dict[str, str]:
    """``NODE``, ``EXT_TASKS_MODULES`` and the versions, from scripts/ensure_ext_tasks.sh
    (skips, saying why, where npm cannot install them)."""
    out = ensure_installed("ensure_ext_tasks.sh", "ext-tasks and the 2.x TypeScript client (npm)")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def command(client: str, url: str, action: str, tool: str, args: dict[str, Any]) -> list[str]:
    """The argv that runs ``client``'s ``action`` on ``tool`` with ``args`` against ``url``."""
    rest = [url, action, tool, json.dumps(args)]
    if client == "fastmcp-tasks":
        return [str(fastmcp_tasks_python()), str(FASTMCP_TASKS_CLIENT), *rest]
    if client == "ext-tasks":
        return [ext_tasks_tools()["NODE"], str(EXT_TASKS_REQUESTER), *rest]
    raise ValueError(f"unknown client {client!r}; expected one of {CLIENTS}")


def environ(client: str) -> dict[str, str]:
    """The environment a client runs in: ours without PYTHONPATH (the side venv must not
    import our packages), with the requester's module folder for Node."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if client == "ext-tasks":
        env["EXT_TASKS_MODULES"] = ext_tasks_tools()["EXT_TASKS_MODULES"]
    return env


def start(
    client: str, url: str, action: str, tool: str, args: dict[str, Any]
) -> subprocess.Popen[str]:
    """The client started (its answer read by :func:`finish`)."""
    return subprocess.Popen(
        command(client, url, action, tool, args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=environ(client),
    )


def finish(proc: subprocess.Popen[str], timeout: float = RUN_TIMEOUT) -> Any:
    """A started client's JSON answer (its stdout's last line); it must exit 0."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the client ran past {timeout} s: {err[-3000:]}") from None
    assert proc.returncode == 0, f"exit {proc.returncode}: {err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def run(client: str, url: str, action: str, tool: str, args: dict[str, Any]) -> Any:
    """``client``'s ``action`` run to its end; its JSON answer."""
    return finish(start(client, url, action, tool, args))
