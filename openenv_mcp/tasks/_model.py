"""Tasks, splits and task sets: what an environment publishes to be trained and
evaluated on (the contract's optional tasks facet).

A task set is named splits (``train``, ``validation``, ``test``), each a sequence of
tasks; a task has a stable id, an optional difficulty and group, and what its episode
starts from (a seed and per-episode options). The env that publishes it judges success
(:meth:`TaskSet.success`). Nothing here imports MCP or an environment: the server, the
client, the pipeline and the eval all read the same values.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from openenv_mcp.errors import ArgumentError, UnknownTask, did_you_mean

__all__ = [
    "SPLIT_TYPES",
    "Ending",
    "LazyTasks",
    "SeedTasks",
    "Split",
    "SplitType",
    "Task",
    "TaskSet",
    "UnknownTask",
]

#: The kinds of split (OpenEnv's and ORS's ``SplitType``).
SplitType = Literal["train", "validation", "test"]
SPLIT_TYPES: tuple[SplitType, ...] = ("train", "validation", "test")
#: Ids a task may have: printable, no whitespace, at most 200 characters.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+=-]{0,199}")


@dataclass(frozen=True)
class Split:
    """One named split of a task set.

    Attributes:
        name: how callers name it (``"test"``, ``"mode0-test"``).
        type: what it is for: ``train``, ``validation`` or ``test``.
    """

    name: str
    type: SplitType

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.name):
            raise ValueError(f"split name {self.name!r}: letters, digits and ._:/@+=- only")
        if self.type not in SPLIT_TYPES:
            raise ValueError(f"split {self.name!r}: type must be one of {SPLIT_TYPES}")

    def to_json(self) -> dict[str, str]:
        """``{"name", "type"}``: the Task API's split, as OpenEnv and ORS send it."""
        return {"name": self.name, "type": self.type}


@dataclass(frozen=True)
class Task:
    """One task: a stable id and what its episode starts from.

    Attributes:
        id: unique across the env's splits and stable across versions (a saved eval
            names tasks by it).
        seed: the seed its episode resets with (``None``: the env is deterministic
            given ``options``, or the task's options fix everything).
        options: the per-episode options its episode resets with (the env's
            ``Options``).
        difficulty: a label results are grouped by (``"easy"``, ``"mode 2"``), or
            ``None``.
        group: tasks that share something (a game, a family of problems), or ``None``.
        data: what a reader may see of the task before playing it (a prompt, a
            question, a position), JSON-able; never its answer.
    """

    id: str
    seed: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    difficulty: str | None = None
    group: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _ID.fullmatch(self.id):
            raise ValueError(f"task id {self.id!r}: letters, digits and ._:/@+=- only, 1-200")
        if self.seed is not None and (
            not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0
        ):
            raise ValueError(f"task {self.id}: seed must be a non-negative int, got {self.seed!r}")

    def to_json(self) -> dict[str, Any]:
        """The task as the Task API and the ``tasks`` resources send it (``None``s left
        out)."""
        out: dict[str, Any] = {"id": self.id}
        if self.seed is not None:
            out["seed"] = self.seed
        if self.options:
            out["options"] = dict(self.options)
        if self.difficulty is not None:
            out["difficulty"] = self.difficulty
        if self.group is not None:
            out["group"] = self.group
        if self.data:
            out["data"] = dict(self.data)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Task:
        """A task from :meth:`to_json`'s form (what a client reads back)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
            raise ArgumentError(
                f"a task must be an object with a string 'id', got {str(data)[:80]!r}"
            )
        known = {"id", "seed", "options", "difficulty", "group", "data"}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Ending:
    """How an episode of a task ended: what :meth:`TaskSet.success` judges.

    Attributes:
        episode_return: the sum of the rewards served (composed rewards included).
        env_return: the sum of the environment's own rewards.
        steps: steps taken.
        terminated, truncated: how it ended (both ``False``: it has not ended).
        info: the last step's ``info``.
    """

    episode_return: float
    env_return: float
    steps: int
    terminated: bool
    truncated: bool
    info: Mapping[str, Any] = field(default_factory=dict)


class LazyTasks(Sequence[Task]):
    """A split's tasks made on demand: ``make(i)`` is task ``i`` of ``size``.

    For generated task sets (seeds, procedural problems): a split of a million tasks
    costs nothing until one is read.
    """

    def __init__(self, size: int, make: Callable[[int], Task]) -> None:
        if size < 0:
            raise ValueError(f"a split's size must be >= 0, got {size}")
        self._size = size
        self._make = make

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Task: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Task]: ...
    def __getitem__(self, index: int | slice) -> Task | Sequence[Task]:
        if isinstance(index, slice):
            return [self._make(i) for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError(index)
        return self._make(index)

    def __iter__(self) -> Iterator[Task]:
        return (self._make(i) for i in range(self._size))


class TaskSet(ABC):
    """An environment's splits and tasks, and its rule for success.

    Implement :meth:`splits`, :meth:`tasks` and :meth:`success`; :meth:`scores` adds
    scores beside the return where the env has them (a human-normalized score).
    Everything else is derived. An env publishes one from
    :meth:`openenv_mcp.Environment.task_set`.

    Tasks must be deterministic: the same task twice gives the same first observation.
    """

    @abstractmethod
    def splits(self) -> Sequence[Split]:
        """The splits, in the order they are listed."""

    @abstractmethod
    def tasks(self, split: str) -> Sequence[Task]:
        """The tasks of split ``split`` (a name from :meth:`splits`, checked by the
        caller), in order: index ``i`` is task ``i``."""

    @abstractmethod
    def success(self, task: Task, ending: Ending) -> bool:
        """Whether an episode of ``task`` that ended so succeeded."""

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        """Scores of the ended episode beside its return (``{}``: none)."""
        return {}

    # -- derived ---------------------------------------------------------------------------

    def split(self, name: str) -> Split:
        """The split named ``name``.

        Raises:
            UnknownTask: no such split (the message lists them, with "did you mean").
        """
        splits = self.splits()
        for split in splits:
            if split.name == name:
                return split
        names = [s.name for s in splits]
        raise UnknownTask(
            f"no split {name!r}.{did_you_mean(str(name), names)} Splits: {', '.join(names)}"
        )

    def split_tasks(self, name: str) -> Sequence[Task]:
        """The tasks of the split named ``name`` (checked)."""
        return self.tasks(self.split(name).name)

    def task(self, split: str, index: int) -> Task:
        """Task ``index`` of ``split``.

        Raises:
            UnknownTask: no such split, or ``index`` is past its end (the message says
                how many tasks the split has).
        """
        tasks = self.split_tasks(split)
        if isinstance(index, bool) or not isinstance(index, int):
            raise UnknownTask(f"index must be an integer, got {type(index).__name__} {index!r}")
        size = len(tasks)
        if not 0 <= index < size:
            raise UnknownTask(
                f"split {split!r} has {size} task{'s' if size != 1 else ''} "
                f"(indices 0-{size - 1}), got index {index}"
                if size
                else f"split {split!r} has no tasks, got index {index}"
            )
        return tasks[index]

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        """Where the task with id ``task_id`` is: ``(split, index, task)``.

        The default searches every split in order (and remembers each id it reads);
        a large generated set overrides it to parse its ids.

        Raises:
            UnknownTask: no task has this id.
        """
        found = self._index().get(task_id)
        if found is None:
            raise UnknownTask(f"no task {task_id!r} in any split ({self._size_words()})")
        split, index = found
        return split, index, self.tasks(split)[index]

    def _index(self) -> dict[str, tuple[str, int]]:
        cached: dict[str, tuple[str, int]] | None = getattr(self, "_id_index", None)
        if cached is None:
            cached = {}
            for split in self.splits():
                for index, task in enumerate(self.tasks(split.name)):
                    cached.setdefault(task.id, (split.name, index))
            self._id_index = cached
        return cached

    def _size_words(self) -> str:
        return ", ".join(f"{s.name}: {len(self.tasks(s.name))}" for s in self.splits())

    def check(self) -> list[str]:
        """What this task set gets wrong (empty: nothing): splits named twice, tasks
        with the same id, an unreadable task. Reads at most 1,000 tasks a split."""
        problems: list[str] = []
        names = [s.name for s in self.splits()]
        if not names:
            problems.append("no splits")
        if len(set(names)) != len(names):
            problems.append(f"a split is named twice: {names}")
        seen: dict[str, str] = {}
        for name in dict.fromkeys(names):
            tasks = self.tasks(name)
            for index in range(min(len(tasks), 1000)):
                try:
                    task = tasks[index]
                except Exception as exc:
                    problems.append(f"{name}[{index}] cannot be read: {exc!r}")
                    break
                if not isinstance(task, Task):
                    problems.append(f"{name}[{index}] is a {type(task).__name__}, not a Task")
                    break
                if task.id in seen:
                    problems.append(f"task id {task.id!r} is in {seen[task.id]} and {name}")
                seen.setdefault(task.id, name)
        return problems


#: Where each split's seeds start in a :class:`SeedTasks` set: far apart, so no seed
#: is in two splits.
SEED_BASES: Mapping[SplitType, int] = {"train": 0, "validation": 1_000_000, "test": 2_000_000}


class SeedTasks(TaskSet):
    """A task set of seeds: ``train``, ``validation`` and ``test`` splits of disjoint
    seeds (``train`` from 0, ``validation`` from 1,000,000, ``test`` from 2,000,000),
    each task one seed with the same options.

    Args:
        prefix: the tasks' id prefix (``"cartpole"``: ids ``cartpole-test-0007``).
        success: the rule (``ending -> bool``).
        sizes: tasks in each split (a split of size 0 is left out).
        options: every task's per-episode options.
        difficulty, group: every task's.
        scores: scores beside the return (``ending -> {name: value}``), or ``None``.
    """

    def __init__(
        self,
        prefix: str,
        success: Callable[[Ending], bool],
        *,
        sizes: Mapping[str, int] | None = None,
        options: Mapping[str, Any] | None = None,
        difficulty: str | None = None,
        group: str | None = None,
        scores: Callable[[Ending], dict[str, float]] | None = None,
    ) -> None:
        self.prefix = prefix
        default: dict[str, int] = {"train": 1000, "validation": 100, "test": 100}
        self.sizes: dict[str, int] = dict(sizes or default)
        self.options = dict(options or {})
        self.difficulty = difficulty
        self.group = group
        self._success = success
        self._scores = scores
        self._splits = [Split(kind, kind) for kind in SPLIT_TYPES if self.sizes.get(kind, 0) > 0]

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        kind = self.split(split).type
        base = SEED_BASES[kind]
        size = self.sizes[kind]

        def make(i: int) -> Task:
            return Task(
                f"{self.prefix}-{split}-{i:04d}",
                seed=base + i,
                options=self.options,
                difficulty=self.difficulty,
                group=self.group,
            )

        return LazyTasks(size, make)

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        head, _, index = task_id.rpartition("-")
        prefix, _, split = head.rpartition("-")
        if prefix == self.prefix and index.isdigit() and split in self.sizes:
            i = int(index)
            if i < self.sizes[split] and task_id == f"{prefix}-{split}-{i:04d}":
                return split, i, self.tasks(split)[i]
        raise UnknownTask(
            f"no task {task_id!r}: this set's ids are {self.prefix}-SPLIT-NNNN "
            f"({self._size_words()})"
        )

    def success(self, task: Task, ending: Ending) -> bool:
        return self._success(ending)

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        return {} if self._scores is None else self._scores(ending)
