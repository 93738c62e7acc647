"""The coding env's task set: its programming tasks in train, validation and test splits.

The tasks are the ones the server serves (the built-in set, or ``--task-file``'s); a
task's id is its own name, so ``reset(options={"task": "fizzbuzz"})`` starts it as it
always did. Each task's split comes from its name alone: the SHA-256 of the name (UTF-8),
read as a big-endian integer, modulo 10, puts it in ``train`` (0-5),
``validation`` (6-7) or ``test`` (8-9). A task keeps its split whatever other tasks a
file holds, and adding a task never moves another (the built-in 13: 8 train, 2
validation, 3 test). A split is listed in name order; an empty one is left out.

A task's ``data`` is what the agent may read before playing it: its title, prompt,
function name and signature, and how many hidden tests there are; never the tests.
Success is passing every hidden test: the episode ended (``terminated``) on a test run
whose score was 1.0.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

from openenv_mcp.errors import did_you_mean
from openenv_mcp.tasks import SPLIT_TYPES, Ending, Split, SplitType, Task, TaskSet, UnknownTask
from openenv_mcp_envs.coding._problems import Task as Problem

__all__ = ["CodingTasks", "coding_tasks", "split_of"]


def split_of(name: str) -> SplitType:
    """The split of the task named ``name``: its name's SHA-256 modulo 10, 0-5 train,
    6-7 validation, 8-9 test."""
    bucket = int.from_bytes(hashlib.sha256(name.encode()).digest(), "big") % 10
    return "train" if bucket < 6 else "validation" if bucket < 8 else "test"


def _task(problem: Problem) -> Task:
    return Task(
        problem.name,
        options={"task": problem.name},
        data={
            "title": problem.title,
            "prompt": problem.prompt,
            "entry_point": problem.entry_point,
            "signature": problem.signature,
            "tests": len(problem.tests),
        },
    )


class CodingTasks(TaskSet):
    """The served tasks in the splits :func:`split_of` gives them.

    Args:
        problems: the tasks, each once (by name).
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        grouped: dict[str, list[Task]] = {kind: [] for kind in SPLIT_TYPES}
        for problem in sorted(problems, key=lambda p: p.name):
            grouped[split_of(problem.name)].append(_task(problem))
        self._tasks = {kind: tasks for kind, tasks in grouped.items() if tasks}
        self._splits = [Split(kind, kind) for kind in SPLIT_TYPES if kind in self._tasks]
        self._where = {
            task.id: (kind, index)
            for kind, tasks in self._tasks.items()
            for index, task in enumerate(tasks)
        }

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        return self._tasks[self.split(split).name]

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        found = self._where.get(task_id) if isinstance(task_id, str) else None
        if found is None:
            shown = str(task_id)[:60]
            raise UnknownTask(
                f"no task {shown!r}.{did_you_mean(shown, self._where)} Tasks: "
                f"{', '.join(sorted(self._where))}"
            )
        split, index = found
        return split, index, self._tasks[split][index]

    def success(self, task: Task, ending: Ending) -> bool:
        score = ending.info.get("score")
        return ending.terminated and isinstance(score, (int, float)) and score >= 1.0


def coding_tasks(problems: Sequence[Problem]) -> CodingTasks:
    """The task set of ``problems`` (one per set of tasks, shared by every episode that
    serves the same tasks)."""
    return _by_json(tuple(p.model_dump_json() for p in problems))


@functools.cache
def _by_json(problems: tuple[str, ...]) -> CodingTasks:
    return CodingTasks([Problem.model_validate_json(p) for p in problems])
