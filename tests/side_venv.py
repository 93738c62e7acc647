"""The side venv of OpenEnv 0.10 and the ``openreward`` client (scripts/setup_venv.py's
``SIDE``): what cannot share our venv, run from it. Its Task API server
(tests/openenv_task_app.py) over our echo env's tasks, and scripts run by its Python
that print one JSON answer."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.openenv_procs import openenv_server
from tests.servers import ROOT

SIDE = "openenv-0.10"
#: OpenEnv 0.10 imports gradio and more at start: seconds, on a busy machine many.
START_TIMEOUT = 120.0
#: A client script's whole run.
RUN_TIMEOUT = 120.0


def side_python(side: str = SIDE) -> Path:
    """The interpreter of the side venv ``side`` (scripts/setup_venv.py's ``SIDE``), built by
    the project's set-up if it is not yet (once: locked and stamped). Skips where the
    install cannot happen (no package index)."""
    spec = importlib.util.spec_from_file_location("setup_venv", ROOT / "scripts/setup_venv.py")
    assert spec is not None and spec.loader is not None
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    try:
        python: Path = setup.side_python(Path(sys.prefix), side)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"the side venv {side} could not be installed (pip exited {exc.returncode})")
    return python


def echo_tasks_spec(env_name: str = "echo") -> dict[str, Any]:
    """Our echo env's task set as the reference server reads it."""
    from openenv_mcp_envs.echo.env import EchoConfig, _echo_tasks

    task_set = _echo_tasks(EchoConfig().reward_per_char)
    return {
        "env_name": env_name,
        "splits": [s.to_json() for s in task_set.splits()],
        "tasks": {s.name: [t.to_json() for t in task_set.tasks(s.name)] for s in task_set.splits()},
    }


@contextlib.contextmanager
def task_server(spec: dict[str, Any]) -> Iterator[str]:
    """OpenEnv 0.10's own server (``create_app``) of tests/openenv_task_app.py over
    ``spec``'s tasks, on a loopback port; yields its base URL."""
    python = side_python()
    with tempfile.TemporaryDirectory() as folder:
        tasks = Path(folder) / "tasks.json"
        tasks.write_text(json.dumps(spec))
        env = {**os.environ, "OPENENV_TASKS": str(tasks), "ENABLE_WEB_INTERFACE": "false"}
        env.pop("PYTHONPATH", None)
        app = "tests.openenv_task_app:app"
        with openenv_server(app, python=python, env=env, timeout=START_TIMEOUT) as url:
            yield url


def run_side(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """``script`` run by the side venv's Python with ``args`` (``sys.argv[1:]``) and
    ``env`` added to this process's environment; its stdout's last line, parsed as JSON."""
    python = side_python()
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=ROOT,
        env={**environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
