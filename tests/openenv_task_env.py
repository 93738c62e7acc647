"""An OpenEnv environment with OpenEnv 0.10's Task API methods (``list_splits``,
``list_tasks``, ``num_tasks``, ``get_task``, ``get_task_range``) and a reset that starts
a task by ``split`` and ``index``: served by OpenEnv's own server in the side venv
(tests/openenv_task_app.py) and in process by the bridge (``serve openenv --env``).

It imports nothing of openenv-mcp (the side venv cannot): its tasks come as JSON from
the file ``OPENENV_TASKS`` names (``{"env_name", "splits": [...], "tasks": {split:
[...]}}``; tests/side_venv.py writes our echo env's). The environment is an echo: reset
greets with the task's ``options.greeting``, each step echoes the message with a reward
of 0.1 a character, and ``"bye"`` ends the episode with a reward of 1 where the greeting
was echoed, else 0 (a final reward that says whether the task was done).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


@functools.cache
def spec() -> dict[str, Any]:
    """The tasks, read from ``OPENENV_TASKS`` at first use."""
    loaded: dict[str, Any] = json.loads(Path(os.environ["OPENENV_TASKS"]).read_text())
    return loaded


class EchoAction(Action):
    """One message."""

    message: str


class EchoObservation(Observation):
    """The message echoed, and the task being played."""

    message: str = ""
    task_id: str | None = None


class TaskEchoEnv(Environment[EchoAction, EchoObservation, State]):
    """Echo with tasks: OpenEnv 0.10's TaskProvider methods over :func:`spec`'s."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self._task: dict[str, Any] | None = None
        self._said: list[str] = []

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        split: str | None = None,
        index: int | None = None,
        **kwargs: Any,
    ) -> EchoObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        self._said = []
        self._task = None if split is None else self.get_task(split, int(index or 0))
        greeting = (self._task or {}).get("options", {}).get("greeting", "")
        task_id = None if self._task is None else self._task["id"]
        return EchoObservation(message=greeting, task_id=task_id, done=False, reward=None)

    def step(self, action: EchoAction, **kwargs: Any) -> EchoObservation:  # type: ignore[override]
        self._state.step_count += 1
        greeting = (self._task or {}).get("options", {}).get("greeting")
        self._said.append(action.message)
        done = action.message == "bye"
        reward = round(0.1 * len(action.message), 10)
        if done:
            reward = 1.0 if greeting in self._said else 0.0
        return EchoObservation(
            message=action.message,
            task_id=None if self._task is None else self._task["id"],
            done=done,
            reward=reward,
        )

    @property
    def state(self) -> State:
        return self._state

    # -- OpenEnv 0.10's TaskProvider -------------------------------------------------------

    def _split(self, split: str) -> list[dict[str, Any]]:
        tasks = spec()["tasks"]
        if split not in tasks:
            raise IndexError(f"no split {split!r}")  # OpenEnv's route: 400
        return tasks[split]

    def list_splits(self) -> list[dict[str, str]]:
        splits: list[dict[str, str]] = spec()["splits"]
        return splits

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return self._split(split)

    def num_tasks(self, split: str) -> int:
        return len(self._split(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        tasks = self._split(split)
        if index < 0:
            raise IndexError(index)
        return tasks[index]

    def get_task_range(
        self, split: str, start: int | None = None, stop: int | None = None
    ) -> list[dict[str, Any]]:
        return self._split(split)[slice(start, stop)]
