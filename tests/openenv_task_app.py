"""OpenEnv 0.10's own server (``create_app``) of the task echo env
(tests/openenv_task_env.py): the reference our ``--openenv`` face's Task API is
compared with, and the remote the bridge passes tasks through from. Run in the side
venv (``openenv==0.10.0`` needs fastmcp<4, so it cannot share ours):
``OPENENV_TASKS=tasks.json python -m uvicorn tests.openenv_task_app:app``.
"""

from __future__ import annotations

from openenv.core.env_server.http_server import create_app

from tests.openenv_task_env import EchoAction, EchoObservation, TaskEchoEnv, spec

app = create_app(
    TaskEchoEnv,
    EchoAction,
    EchoObservation,
    env_name=spec()["env_name"],
    max_concurrent_envs=8,
)
