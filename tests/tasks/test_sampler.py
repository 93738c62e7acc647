"""TaskSampler: sequential, uniform and curriculum draws, counts shared through the
server's task-stats JSON, and what a stranger's bad input gets."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pytest

from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.tasks import LazyTasks, SeedTasks, Task, TaskSampler

pytestmark = pytest.mark.unit


def tasks(n: int) -> list[Task]:
    return [Task(f"t-{i:03d}", seed=i) for i in range(n)]


def played(sampler: TaskSampler, task_id: str, n: int, successes: int) -> None:
    for i in range(n):
        sampler.update(task_id, i < successes)


# -- sequential and uniform ------------------------------------------------------------------


def test_sequential_cycles_in_order() -> None:
    sampler = TaskSampler(tasks(3), "sequential")
    assert [sampler.next().id for _ in range(7)] == [
        "t-000",
        "t-001",
        "t-002",
        "t-000",
        "t-001",
        "t-002",
        "t-000",
    ]
    # counts change nothing of the order
    played(sampler, "t-001", 10, 10)
    assert sampler.next().id == "t-001"


def test_uniform_covers_every_task_evenly() -> None:
    sampler = TaskSampler(tasks(10), "uniform", seed=3)
    counts = Counter(sampler.next().id for _ in range(5000))
    assert set(counts) == {f"t-{i:03d}" for i in range(10)}
    assert min(counts.values()) > 350 and max(counts.values()) < 650  # 500 expected each


def test_draws_are_deterministic_given_the_seed() -> None:
    def run(seed: int) -> list[str]:
        sampler = TaskSampler(tasks(20), "curriculum", group_size=4, seed=seed)
        out = []
        for i in range(200):
            task = sampler.next()
            out.append(task.id)
            sampler.update(task.id, (i * 7 + int(task.id[-2:])) % 3 == 0)
        return out

    assert run(5) == run(5)
    assert run(5) != run(6)
    uniform = [TaskSampler(tasks(20), "uniform", seed=1) for _ in range(2)]
    assert [uniform[0].next().id for _ in range(50)] == [uniform[1].next().id for _ in range(50)]


# -- the curriculum --------------------------------------------------------------------------


def test_curriculum_prefers_tasks_with_mixed_outcomes() -> None:
    sampler = TaskSampler(tasks(3), "curriculum", group_size=8, seed=0)
    played(sampler, "t-000", 200, 200)  # solved: p ~ 1
    played(sampler, "t-001", 200, 100)  # mixed: p ~ 0.5
    played(sampler, "t-002", 200, 0)  # hopeless: p ~ 0
    counts = Counter(sampler.next().id for _ in range(5000))
    # weights ~0.06, ~1.01, ~0.06: the mixed task about 17 times as often as either
    assert counts["t-001"] > 5 * counts["t-000"]
    assert counts["t-001"] > 5 * counts["t-002"]
    # the floor: neither decided task starves
    assert counts["t-000"] > 0 and counts["t-002"] > 0


def test_unseen_tasks_count_as_even_odds_and_the_weight_is_the_mixed_group_chance() -> None:
    sampler = TaskSampler(tasks(2), group_size=4, floor=0.0)
    assert sampler.probability("t-000") == 0.5
    assert sampler.weight("t-000") == pytest.approx(1 - 2 * 0.5**4)
    played(sampler, "t-000", 3, 3)  # Beta(1, 1): p = (3 + 1) / (3 + 2)
    assert sampler.probability("t-000") == pytest.approx(0.8)
    assert sampler.weight("t-000") == pytest.approx(1 - 0.8**4 - 0.2**4)
    assert TaskSampler(tasks(1), prior=(1.0, 3.0)).probability("t-000") == 0.25


def test_group_of_one_carries_no_signal_so_the_floor_draws_uniformly() -> None:
    for floor in (0.0, 0.02):
        sampler = TaskSampler(tasks(4), group_size=1, floor=floor, seed=2)
        counts = Counter(sampler.next().id for _ in range(2000))
        assert set(counts) == {f"t-{i:03d}" for i in range(4)}
        assert min(counts.values()) > 380  # 500 expected each


def test_a_lazy_split_of_many_tasks_samples_without_making_them_all_again() -> None:
    made: list[int] = []

    def make(i: int) -> Task:
        made.append(i)
        return Task(f"lazy-{i:05d}", seed=i)

    sampler = TaskSampler(LazyTasks(20_000, make), seed=4)
    assert len(made) == 20_000  # each read once, for its id
    made.clear()
    drawn = [sampler.next() for _ in range(100)]
    assert len(made) == 100 and all(
        t.id == f"lazy-{i:05d}" for t, i in zip(drawn, made, strict=True)
    )
    played(sampler, "lazy-00007", 50, 50)
    assert sampler.weight("lazy-00007") < sampler.weight("lazy-00008") / 2


# -- counts shared ---------------------------------------------------------------------------


def test_counts_round_trip_and_absorb_the_servers_task_stats() -> None:
    first = TaskSampler(tasks(3), seed=1)
    played(first, "t-000", 4, 1)
    assert first.counts() == {"tasks": {"t-000": {"n": 4, "successes": 1}}}
    second = TaskSampler.from_counts(tasks(3), first.counts(), group_size=8, seed=1)
    assert second.counts() == first.counts()
    assert second.probability("t-000") == first.probability("t-000")
    # the server's JSON, as text: listed tasks are replaced (the server counted ours too),
    # other splits' ids are left out, unlisted tasks keep their counts
    stats = {
        "tasks": {
            "t-000": {"n": 10, "successes": 5},
            "t-002": {"n": 1, "successes": 1},
            "other-split-0001": {"n": 3, "successes": 0},
        },
        "episodes": 14,
        "dropped": 0,
    }
    played(second, "t-001", 2, 2)
    assert second.absorb(json.dumps(stats)) == 2
    assert second.counts() == {
        "tasks": {
            "t-000": {"n": 10, "successes": 5},
            "t-001": {"n": 2, "successes": 2},
            "t-002": {"n": 1, "successes": 1},
        }
    }
    assert second.absorb(json.dumps(stats).encode()) == 2  # bytes too; the same again


# -- what a stranger gets -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "words"),
    [
        ((tasks(0),), {}, "no tasks to sample from"),
        ((LazyTasks(0, lambda i: Task("x")),), {}, "no tasks to sample from"),
        ((tasks(2), "random"), {}, "strategy must be one of sequential, uniform, curriculum"),
        ((tasks(2), "curiculum"), {}, "Did you mean 'curriculum'"),
        ((tasks(2),), {"group_size": 0}, "group_size must be an integer >= 1"),
        ((tasks(2),), {"group_size": 2.5}, "group_size must be an integer >= 1"),
        ((tasks(2),), {"group_size": True}, "group_size must be an integer >= 1"),
        ((tasks(2),), {"prior": (0, 1)}, "prior must be two positive numbers"),
        ((tasks(2),), {"prior": (1,)}, "prior must be two positive numbers"),
        ((tasks(2),), {"floor": -0.1}, "floor must be a number >= 0"),
        ((tasks(2),), {"floor": float("nan")}, "floor must be a number >= 0"),
        (([*tasks(2), Task("t-001")],), {}, "task id 't-001' is listed twice"),
        ((["t-000", "t-001"],), {}, "tasks[0] is a str, not a Task"),
        (("t-000",), {}, "tasks must be a sequence of Task"),
        (({"t-000": 1},), {}, "tasks must be a sequence of Task"),
    ],
)
def test_bad_construction_says_what_was_expected(
    args: tuple[Any, ...], kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(ArgumentError) as caught:
        TaskSampler(*args, **kwargs)
    assert words in str(caught.value)


def test_update_of_an_unknown_task_or_a_non_bool_is_refused_and_changes_nothing() -> None:
    sampler = TaskSampler(tasks(3), seed=0)
    with pytest.raises(UnknownTask, match=r"no task 't-999' in this sampler \(3 tasks"):
        sampler.update("t-999", True)
    with pytest.raises(UnknownTask, match="Did you mean 't-001'"):
        sampler.update("t-01", True)
    with pytest.raises(UnknownTask, match="no task 7"):
        sampler.update(7, True)  # type: ignore[arg-type]
    for bad in (1, "yes", None, 0.5):
        with pytest.raises(ArgumentError, match="success must be a bool"):
            sampler.update("t-000", bad)  # type: ignore[arg-type]
    with pytest.raises(UnknownTask):
        sampler.probability("nope")
    assert sampler.counts() == {"tasks": {}}
    sampler.update("t-000", np.bool_(True))  # numpy's bool is a bool here
    assert sampler.counts() == {"tasks": {"t-000": {"n": 1, "successes": 1}}}


@pytest.mark.parametrize(
    ("stats", "words"),
    [
        ("{not json", "task stats: not valid JSON"),
        (b"\xff\xfe", "task stats: not valid JSON"),
        ([], 'task stats must be an object {"tasks"'),
        ({"task": {}}, 'task stats must be an object {"tasks"'),
        ({"tasks": []}, 'task stats must be an object {"tasks"'),
        ({"tasks": {"t-000": 3}}, "task stats for 't-000': expected {'n': int >= 0"),
        ({"tasks": {"t-000": {"n": -1, "successes": 0}}}, "expected {'n': int >= 0"),
        ({"tasks": {"t-000": {"n": 1.5, "successes": 0}}}, "expected {'n': int >= 0"),
        ({"tasks": {"t-000": {"n": True, "successes": 0}}}, "expected {'n': int >= 0"),
        ({"tasks": {"t-000": {"n": 2}}}, "expected {'n': int >= 0"),
        ({"tasks": {"t-000": {"n": 2, "successes": 3}}}, "3 successes in 2 episodes"),
    ],
)
def test_bad_stats_are_refused_whole(stats: Any, words: str) -> None:
    sampler = TaskSampler(tasks(3), seed=0)
    played(sampler, "t-001", 2, 1)
    if isinstance(stats, dict) and isinstance(stats.get("tasks"), dict):
        stats["tasks"]["t-002"] = {"n": 5, "successes": 5}  # a good entry beside the bad
    before = sampler.counts()
    with pytest.raises(ArgumentError) as caught:
        sampler.absorb(stats)
    assert words in str(caught.value)
    assert sampler.counts() == before


def test_a_seed_task_split_samples_as_a_list_does() -> None:
    split = SeedTasks("coin", lambda ending: ending.terminated, sizes={"test": 5})
    sampler = TaskSampler(split.split_tasks("test"), "sequential")
    assert [sampler.next().id for _ in range(6)][-1] == "coin-test-0000"
    assert len(sampler) == 5
    assert next(iter(sampler)).id == "coin-test-0001"
