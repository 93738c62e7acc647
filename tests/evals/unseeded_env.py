"""Two test-only variants of the echo env for the eval's tests, built in memory with
``build_server(Class)``: one whose first observation ignores the seed (the eval's
reproducibility probe must say ``false``), one that publishes no tasks."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.echo import EchoEnv


class UnseededEcho(EchoEnv):
    """Echo whose greeting ends with fresh OS entropy: the same task never starts the same."""

    name: ClassVar[str] = "unseeded_echo"

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        greeting, info = super().reset(seed, options)
        return f"{greeting} {os.urandom(8).hex()}", info


class TasklessEcho(EchoEnv):
    """Echo without a task set."""

    name: ClassVar[str] = "taskless_echo"

    def task_set(self) -> TaskSet | None:  # type: ignore[override]
        return None
