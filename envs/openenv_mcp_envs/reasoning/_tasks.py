"""The reasoning env's task set: reasoning-gym's problems as tasks.

Each split holds, for every configured dataset and curriculum level, that many problems
(``--train-size`` and the like, per dataset and level), interleaved: task ``i`` of a
split is problem ``i // C`` of combination ``i % C`` (``C`` datasets times levels), so
the first tasks of a split already mix every dataset and level. A task starts from the
split's seed (train 0, validation 1,000,000, test 2,000,000: reasoning-gym draws entry
``n`` of seed ``s`` from ``Random(s + n)``, so no seed of one split is another's) and the
options ``{"dataset", "level", "entry"}``. Ids read
``reasoning-DATASET-levelL-SPLIT-NNNN``; a task's ``data`` is its question, never its
answer. Success is reasoning-gym's score of exactly 1.

Listing costs nothing until a task is read; reading one generates its question
(0.01-3 ms, the first of a dataset and level up to 100 ms).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from openenv_mcp.errors import UnknownTask
from openenv_mcp.tasks import SPLIT_TYPES, Ending, LazyTasks, Split, Task, TaskSet
from openenv_mcp_envs.reasoning._problems import check_dataset, make_problem

__all__ = ["SPLIT_SEEDS", "ReasoningTasks", "reasoning_tasks"]

#: The seed each split's problems are made with (as :class:`~openenv_mcp.tasks.SeedTasks`
#: starts its splits' seeds): entry ``n`` of seed ``s`` is drawn from ``Random(s + n)``,
#: and a split holds fewer than 1,000,000 problems a dataset and level.
SPLIT_SEEDS = {"train": 0, "validation": 1_000_000, "test": 2_000_000}


def difficulty_label(level: int) -> str:
    """A curriculum level's difficulty label (``"level2"``)."""
    return f"level{level}"


class ReasoningTasks(TaskSet):
    """reasoning-gym's datasets at curriculum levels, as train/validation/test splits.

    Args:
        datasets: reasoning-gym dataset names (each with a curriculum).
        levels: curriculum levels (each within every dataset's).
        sizes: problems per dataset and level in each split (a split of 0 is left out).

    Raises:
        ArgumentError: a dataset or level reasoning-gym cannot serve.
    """

    def __init__(
        self, datasets: Sequence[str], levels: Sequence[int], sizes: dict[str, int]
    ) -> None:
        for name in datasets:
            for level in levels:
                check_dataset(name, level)
        self.combos = [(name, level) for name in datasets for level in levels]
        self.sizes = {kind: sizes.get(kind, 0) for kind in SPLIT_TYPES}
        self._splits = [Split(kind, kind) for kind in SPLIT_TYPES if self.sizes[kind] > 0]

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        kind = self.split(split).type
        combos = len(self.combos)
        return LazyTasks(
            self.sizes[kind] * combos, lambda i: self._make(kind, i // combos, i % combos)
        )

    def _make(self, split: str, number: int, combo: int) -> Task:
        name, level = self.combos[combo]
        seed = SPLIT_SEEDS[split]
        entry = make_problem(name, level, seed, number)
        return Task(
            f"reasoning-{name}-{difficulty_label(level)}-{split}-{number:04d}",
            seed=seed,
            options={"dataset": name, "level": level, "entry": number},
            difficulty=difficulty_label(level),
            group=name,
            data={"question": str(entry["question"])},
        )

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        head, _, number = task_id.rpartition("-")
        head, _, split = head.rpartition("-")
        head, _, label = head.rpartition("-")
        prefix, _, name = head.partition("-")
        if prefix == "reasoning" and number.isdigit() and split in self.sizes:
            n = int(number)
            for combo, (known, level) in enumerate(self.combos):
                if (known, difficulty_label(level)) != (name, label):
                    continue
                if n < self.sizes[split] and task_id == f"{head}-{label}-{split}-{n:04d}":
                    return split, n * len(self.combos) + combo, self._make(split, n, combo)
        shown = ", ".join(
            f"{kind}: {size} a dataset and level" for kind, size in self.sizes.items()
        )
        raise UnknownTask(
            f"no task {task_id[:120]!r}: this set's ids are reasoning-DATASET-levelL-SPLIT-NNNN "
            f"for datasets {', '.join(sorted({n for n, _ in self.combos}))}, levels "
            f"{', '.join(sorted({difficulty_label(lv) for _, lv in self.combos}))} ({shown})"
        )

    def success(self, task: Task, ending: Ending) -> bool:
        return ending.terminated and ending.info.get("score") == 1.0

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        score = ending.info.get("score")
        return {"score": float(score)} if isinstance(score, int | float) else {}


@functools.cache
def reasoning_tasks(
    datasets: tuple[str, ...], levels: tuple[int, ...], sizes: tuple[int, int, int]
) -> ReasoningTasks:
    """The task set of a config (made once per config: an env asks on every task start).

    Args:
        datasets, levels: as the config has them.
        sizes: problems per dataset and level in train, validation and test.
    """
    return ReasoningTasks(datasets, levels, dict(zip(SPLIT_TYPES, sizes, strict=True)))
