"""Which task a reset starts: ``reset(options={"split": S, "index": I})`` or
``reset(options={"task": ID})``, resolved against the env's task set into the seed and
options its episode resets with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openenv_mcp.errors import ArgumentError, UnsupportedOption
from openenv_mcp.tasks._model import Task, TaskSet

__all__ = ["TASK_OPTIONS", "Started", "start_task"]

#: The reset options that name a task; the rest are the env's own.
TASK_OPTIONS = ("split", "index", "task")


@dataclass(frozen=True)
class Started:
    """The task an episode started, and the reset it became.

    Attributes:
        split, index, task: where the task is, and the task.
        seed, options: what the env's ``reset`` gets (the task's, with the caller's
            other options).
    """

    split: str
    index: int
    task: Task
    seed: int | None
    options: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """What an answer says of the task (``structuredContent.task``)."""
        out: dict[str, Any] = {"id": self.task.id, "split": self.split, "index": self.index}
        if self.task.difficulty is not None:
            out["difficulty"] = self.task.difficulty
        if self.task.group is not None:
            out["group"] = self.task.group
        if self.task.data:
            out["data"] = dict(self.task.data)
        return out


def start_task(
    task_set: TaskSet | None,
    env_name: str,
    seed: int | None,
    options: Mapping[str, Any] | None,
) -> Started | None:
    """The task ``options`` name, or ``None`` where they name none.

    Raises:
        UnsupportedOption: the env publishes no tasks.
        UnknownTask: no such split, index or id (naming the split's size, or the splits).
        ArgumentError: both a task id and a split or index; a split without an index
            (or the reverse); a seed or option that contradicts the task's.
    """
    if not options or not any(key in options for key in TASK_OPTIONS):
        return None
    if task_set is None:
        raise UnsupportedOption(
            f"{env_name} publishes no tasks: reset options split, index and task "
            "cannot be used with it"
        )
    split, index, task_id = (options.get(key) for key in TASK_OPTIONS)
    if task_id is not None:
        if split is not None or index is not None:
            raise ArgumentError(
                "reset options: name a task by 'task' (its id) or by 'split' and 'index', "
                f"not both (got task={task_id!r}, split={split!r}, index={index!r})"
            )
        if not isinstance(task_id, str):
            raise ArgumentError(
                f"reset option 'task' must be a task id (a string), got "
                f"{type(task_id).__name__} {task_id!r:.60}"
            )
        split, index, task = task_set.locate(task_id)
    else:
        if not isinstance(split, str) or index is None:
            raise ArgumentError(
                "reset options: a task by index needs both 'split' (a name) and 'index' "
                f"(an integer), got split={split!r}, index={index!r}"
            )
        task = task_set.task(split, index)
    rest = {k: v for k, v in options.items() if k not in TASK_OPTIONS}
    if task.seed is not None and seed is not None and seed != task.seed:
        raise ArgumentError(
            f"task {task.id} starts from seed {task.seed}; reset got seed {seed} too "
            "(leave the seed out to start a task)"
        )
    merged = dict(task.options)
    for key, value in rest.items():
        if key in merged and merged[key] != value:
            raise ArgumentError(
                f"task {task.id} sets option {key!r} to {merged[key]!r}; reset got "
                f"{value!r} too (leave it out to start the task)"
            )
        merged[key] = value
    return Started(
        split,
        int(index),
        task,
        task.seed if task.seed is not None else seed,
        merged or None,
    )
