"""Which task a trainer plays next: in order, uniformly, or where it still carries signal.

GRPO-style training plays each task ``G`` times and learns from the differences between
the rollouts; a task all ``G`` rollouts solve, or all fail, teaches nothing. With ``p``
the chance one rollout succeeds, ``1 - p**G - (1 - p)**G`` is the chance a group of ``G``
is mixed: the ``curriculum`` strategy samples tasks in proportion to it (plus a floor, so
no task starves), ``p`` being each task's running success rate under a Beta prior (an
unseen task has ``p = 0.5``). The counts can come from the server
(``openenv://ENV/task-stats``, :meth:`TaskSampler.absorb`), so several trainers share one
view. Nothing here imports MCP: it reads tasks and counts as values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np

from openenv_mcp.errors import ArgumentError, UnknownTask, did_you_mean
from openenv_mcp.tasks._model import Task

__all__ = ["SamplerStrategy", "TaskSampler"]

#: How a :class:`TaskSampler` picks: ``sequential`` (in order, then again), ``uniform``
#: (each task equally likely, with replacement) or ``curriculum`` (by the chance a group
#: is mixed).
SamplerStrategy = Literal["sequential", "uniform", "curriculum"]
_STRATEGIES: tuple[str, ...] = get_args(SamplerStrategy)
#: Ids listed for "did you mean" only up to this many tasks (difflib is quadratic-ish).
_SUGGEST_LIMIT = 10_000


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


class _SumTree:
    """Weights of ``n`` items with O(log n) update and proportional draw."""

    def __init__(self, weights: np.ndarray) -> None:
        n = len(weights)
        self.size = 1
        while self.size < n:
            self.size *= 2
        self.tree = np.zeros(2 * self.size)
        self.tree[self.size : self.size + n] = weights
        for node in range(self.size - 1, 0, -1):
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]

    def set(self, index: int, weight: float) -> None:
        node = self.size + index
        self.tree[node] = weight
        node //= 2
        while node:
            # Recomputed from the children, not adjusted by a difference: no drift.
            self.tree[node] = self.tree[2 * node] + self.tree[2 * node + 1]
            node //= 2

    def draw(self, u: float) -> int:
        """The item whose span holds ``u * total`` (``0 <= u < 1``)."""
        target = u * self.tree[1]
        node = 1
        while node < self.size:
            left = self.tree[2 * node]
            if target < left or self.tree[2 * node + 1] <= 0.0:
                node = 2 * node
            else:
                target -= left
                node = 2 * node + 1
        return node - self.size


class TaskSampler:
    """Picks the next task to play from a list of tasks, and keeps each one's running
    success counts.

    Deterministic given ``seed``: the same updates give the same draws.

    Args:
        tasks: the tasks (a split's, from a task set or ``client.tasks(split)``); each id
            once. Each task is read once here (its id).
        strategy: ``"sequential"``, ``"uniform"`` or ``"curriculum"``.
        group_size: ``G``, the rollouts played per task (GRPO's group); the curriculum's
            weight is ``1 - p**G - (1 - p)**G``.
        seed: the draws' seed (``None``: a fresh one).
        prior: the Beta prior's ``(successes, failures)`` pseudo-counts: ``p`` is
            ``(successes + a) / (n + a + b)``.
        floor: added to every curriculum weight, so a solved or hopeless task is still
            drawn now and then (and its estimate can move).

    Raises:
        ArgumentError: no tasks, a repeated id, an unknown strategy, ``group_size`` below
            1, a prior not of two positive numbers, or a negative floor.
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        strategy: SamplerStrategy = "curriculum",
        *,
        group_size: int = 8,
        seed: int | None = None,
        prior: tuple[float, float] = (1.0, 1.0),
        floor: float = 0.02,
    ) -> None:
        if strategy not in _STRATEGIES:
            raise ArgumentError(
                f"strategy must be one of {', '.join(_STRATEGIES)}, got {_brief(strategy)}."
                f"{did_you_mean(str(strategy), _STRATEGIES)}"
            )
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ArgumentError(
                f"group_size must be an integer >= 1 (the rollouts per task), got "
                f"{_brief(group_size)}"
            )
        if (
            not isinstance(prior, tuple | list)
            or len(prior) != 2
            or not all(
                isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in prior
            )
        ):
            raise ArgumentError(
                f"prior must be two positive numbers (a Beta's a, b), got {_brief(prior)}"
            )
        if isinstance(floor, bool) or not isinstance(floor, int | float) or not floor >= 0:
            raise ArgumentError(f"floor must be a number >= 0, got {_brief(floor)}")
        if isinstance(tasks, str | bytes | Mapping) or not isinstance(tasks, Sequence):
            raise ArgumentError(
                f"tasks must be a sequence of Task (a split's tasks), got {type(tasks).__name__}"
            )
        if len(tasks) == 0:
            raise ArgumentError("no tasks to sample from (an empty split?)")
        ids: list[str] = []
        for position, task in enumerate(tasks):
            if not isinstance(task, Task):
                raise ArgumentError(
                    f"tasks[{position}] is a {type(task).__name__}, not a Task "
                    "(Task.from_json reads a task's JSON)"
                )
            ids.append(task.id)
        index = {task_id: i for i, task_id in enumerate(ids)}
        if len(index) != len(ids):
            repeated = next(t for t in ids if ids.count(t) > 1)
            raise ArgumentError(f"task id {repeated!r} is listed twice")
        self.tasks = tasks
        self.strategy: SamplerStrategy = strategy
        self.group_size = group_size
        self.prior = (float(prior[0]), float(prior[1]))
        self.floor = float(floor)
        self._ids = ids
        self._index = index
        self._n = np.zeros(len(ids), dtype=np.int64)
        self._successes = np.zeros(len(ids), dtype=np.int64)
        self._rng = np.random.default_rng(seed)
        self._next = 0
        self._tree = _SumTree(np.full(len(ids), self._weight(0, 0)))

    def __len__(self) -> int:
        return len(self._ids)

    # -- drawing ---------------------------------------------------------------------------

    def next(self) -> Task:
        """The next task to play."""
        if self.strategy == "sequential":
            position = self._next
            self._next = (position + 1) % len(self._ids)
        elif self.strategy == "uniform":
            position = int(self._rng.integers(len(self._ids)))
        elif self._tree.tree[1] > 0.0:
            position = self._tree.draw(float(self._rng.random()))
        else:  # every weight 0 (no floor, and G = 1 or every task decided): uniform
            position = int(self._rng.integers(len(self._ids)))
        return self.tasks[position]

    def __iter__(self) -> TaskSampler:
        return self

    def __next__(self) -> Task:
        return self.next()

    # -- counts ----------------------------------------------------------------------------

    def update(self, task_id: str, success: bool) -> None:
        """Count one played episode of ``task_id``.

        Raises:
            UnknownTask: no task of this sampler has that id.
            ArgumentError: ``success`` is not a bool.
        """
        position = self._position(task_id)
        if not isinstance(success, bool | np.bool_):
            raise ArgumentError(
                f"success must be a bool (the task's info['task']['success']), got "
                f"{type(success).__name__} {_brief(success)}"
            )
        self._set(position, int(self._n[position]) + 1, int(self._successes[position]) + success)

    def probability(self, task_id: str) -> float:
        """``p``: the estimated chance one episode of ``task_id`` succeeds (the Beta
        posterior's mean; 0.5 for an unseen task under the default prior)."""
        position = self._position(task_id)
        return self._p(int(self._n[position]), int(self._successes[position]))

    def weight(self, task_id: str) -> float:
        """The curriculum's weight of ``task_id``: ``1 - p**G - (1 - p)**G`` plus the floor."""
        position = self._position(task_id)
        return self._weight(int(self._n[position]), int(self._successes[position]))

    def counts(self) -> dict[str, Any]:
        """The counts, as the server's ``task-stats`` resource has them:
        ``{"tasks": {id: {"n", "successes"}}}`` (tasks played at least once)."""
        return {
            "tasks": {
                self._ids[i]: {"n": int(self._n[i]), "successes": int(self._successes[i])}
                for i in np.flatnonzero(self._n)
            }
        }

    @classmethod
    def from_counts(
        cls,
        tasks: Sequence[Task],
        counts: Mapping[str, Any] | str | bytes,
        strategy: SamplerStrategy = "curriculum",
        **kwargs: Any,
    ) -> TaskSampler:
        """A sampler that starts from ``counts`` (:meth:`counts`' form, or the server's
        ``task-stats`` JSON); ``kwargs`` as the constructor's."""
        sampler = cls(tasks, strategy, **kwargs)
        sampler.absorb(counts)
        return sampler

    def absorb(self, stats: Mapping[str, Any] | str | bytes) -> int:
        """Take the counts of ``stats``: the server's ``openenv://ENV/task-stats`` JSON
        (``{"tasks": {id: {"n": int, "successes": int}}}``), as text or parsed.

        Each listed task's counts are replaced by the listed ones, not added to: the
        server counted this trainer's episodes too. Tasks this sampler does not have
        (another split's) are left out; tasks not listed keep their counts.

        Returns:
            How many of this sampler's tasks the stats listed.

        Raises:
            ArgumentError: not that shape (the message says where), a count that is not a
                non-negative integer, or more successes than episodes. Nothing is taken
                from stats that fail.
        """
        if isinstance(stats, str | bytes):
            try:
                stats = json.loads(stats)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ArgumentError(f"task stats: not valid JSON ({exc})") from None
        if not isinstance(stats, Mapping) or not isinstance(stats.get("tasks"), Mapping):
            raise ArgumentError(
                'task stats must be an object {"tasks": {id: {"n": int, "successes": int}}}, '
                f"got {_brief(stats)}"
            )
        found: list[tuple[int, int, int]] = []
        for task_id, entry in stats["tasks"].items():
            position = self._index.get(task_id) if isinstance(task_id, str) else None
            if position is None:
                continue
            n = entry.get("n") if isinstance(entry, Mapping) else None
            successes = entry.get("successes") if isinstance(entry, Mapping) else None
            if not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (n, successes)
            ):
                raise ArgumentError(
                    f"task stats for {task_id!r}: expected {{'n': int >= 0, 'successes': "
                    f"int >= 0}}, got {_brief(entry)}"
                )
            assert isinstance(n, int) and isinstance(successes, int)
            if successes > n:
                raise ArgumentError(
                    f"task stats for {task_id!r}: {successes} successes in {n} episodes"
                )
            found.append((position, n, successes))
        for position, n, successes in found:
            self._set(position, n, successes)
        return len(found)

    # -- inside ----------------------------------------------------------------------------

    def _position(self, task_id: str) -> int:
        position = self._index.get(task_id) if isinstance(task_id, str) else None
        if position is None:
            hint = did_you_mean(str(task_id), self._ids) if len(self._ids) <= _SUGGEST_LIMIT else ""
            raise UnknownTask(
                f"no task {_brief(task_id)} in this sampler ({len(self._ids)} tasks, e.g. "
                f"{self._ids[0]!r}).{hint}"
            )
        return position

    def _p(self, n: int, successes: int) -> float:
        a, b = self.prior
        return (successes + a) / (n + a + b)

    def _weight(self, n: int, successes: int) -> float:
        p = self._p(n, successes)
        g = self.group_size
        return max(0.0, 1.0 - p**g - (1.0 - p) ** g) + self.floor

    def _set(self, position: int, n: int, successes: int) -> None:
        self._n[position], self._successes[position] = n, successes
        self._tree.set(position, self._weight(n, successes))
