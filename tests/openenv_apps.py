"""OpenEnv's own servers (openenv-core's ``create_app``) of the test environments in
:mod:`tests.openenv_envs`, for ``uvicorn tests.openenv_apps:APP`` in a test's subprocess.

* ``count``: :class:`~tests.openenv_envs.CountEnvironment`, four sessions at once;
* ``count_single``: the same, one session at once (as ``openenv init`` scaffolds it);
* ``tools``: :class:`~tests.openenv_envs.ToolsEnvironment`, an MCP environment.
"""

from __future__ import annotations

from openenv.core.env_server.http_server import create_app

from tests.openenv_envs import (
    CallToolAction,
    CallToolObservation,
    CountAction,
    CountEnvironment,
    CountObservation,
    ToolsEnvironment,
)

count = create_app(
    CountEnvironment, CountAction, CountObservation, env_name="count", max_concurrent_envs=4
)
count_single = create_app(
    CountEnvironment, CountAction, CountObservation, env_name="count", max_concurrent_envs=1
)
tools = create_app(
    ToolsEnvironment, CallToolAction, CallToolObservation, env_name="tools", max_concurrent_envs=4
)
