"""Tasks, splits and task sets as values: their JSON, their checks, and the derived
lookups every env's task set gets (a split by name, a task by index or id)."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.tasks import Ending, LazyTasks, SeedTasks, Split, Task, TaskSet
from openenv_mcp_envs.echo.env import EchoTasks


def ended(episode_return: float = 0.0, *, terminated: bool = True) -> Ending:
    return Ending(episode_return, episode_return, 10, terminated, not terminated, {})


def test_a_task_round_trips_through_its_json_and_leaves_out_what_it_lacks() -> None:
    task = Task("t-1", seed=3, options={"mode": 2}, difficulty="hard", group="g", data={"q": 1})
    assert Task.from_json(task.to_json()) == task
    assert Task("bare").to_json() == {"id": "bare"}
    # what a newer server adds is read past, not refused
    assert Task.from_json({"id": "x", "weight": 2}) == Task("x")


@pytest.mark.parametrize(
    "bad",
    [{"id": ""}, {"id": "has space"}, {"id": "x" * 201}, {"id": "-leading"}, {"id": "a\nb"}],
)
def test_a_task_id_that_cannot_travel_in_a_uri_or_a_report_is_refused(bad: dict) -> None:
    with pytest.raises(ValueError, match="task id"):
        Task.from_json(bad)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_a_task_seed_must_be_a_non_negative_int(seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        Task("t", seed=seed)  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [None, 3, [], {"seed": 1}, "task"])
def test_what_is_not_a_task_is_refused_naming_what_came(data: object) -> None:
    with pytest.raises(ArgumentError, match="a task must be an object"):
        Task.from_json(data)  # type: ignore[arg-type]


def test_a_split_has_one_of_three_types_and_a_name_fit_for_a_uri() -> None:
    assert Split("mode0-test", "test").to_json() == {"name": "mode0-test", "type": "test"}
    with pytest.raises(ValueError, match="type"):
        Split("dev", "dev")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="split name"):
        Split("a b", "train")


def test_lazy_tasks_make_only_what_is_read() -> None:
    made: list[int] = []

    def make(i: int) -> Task:
        made.append(i)
        return Task(f"t-{i}", seed=i)

    tasks = LazyTasks(10**9, make)
    assert len(tasks) == 10**9 and tasks[-1].id == f"t-{10**9 - 1}"
    assert [t.id for t in tasks[3:6]] == ["t-3", "t-4", "t-5"]
    assert made == [10**9 - 1, 3, 4, 5]
    with pytest.raises(IndexError):
        tasks[10**9]


def test_seed_tasks_splits_are_disjoint_and_ids_locate_their_task() -> None:
    tasks = SeedTasks("cart", lambda e: e.episode_return >= 475)
    assert [s.name for s in tasks.splits()] == ["train", "validation", "test"]
    seeds = {s.name: {t.seed for t in tasks.tasks(s.name)} for s in tasks.splits()}
    assert not (seeds["train"] & seeds["test"]) and not (seeds["train"] & seeds["validation"])
    assert tasks.task("test", 7).id == "cart-test-0007"
    assert tasks.locate("cart-test-0007") == ("test", 7, tasks.task("test", 7))
    for stranger in ("cart-test-7", "cart-test-9999", "other-test-0001", "cart-dev-0001", "x"):
        with pytest.raises(UnknownTask, match="cart-SPLIT-NNNN"):
            tasks.locate(stranger)
    assert tasks.success(tasks.task("test", 0), ended(500.0))
    assert not tasks.success(tasks.task("test", 0), ended(20.0))
    assert tasks.check() == []


def test_past_the_end_names_the_split_size_and_a_wrong_split_the_splits() -> None:
    tasks = EchoTasks(0.1)
    with pytest.raises(UnknownTask, match=r"split 'test' has 4 tasks \(indices 0-3\), got index 4"):
        tasks.task("test", 4)
    with pytest.raises(UnknownTask, match="got index -1"):
        tasks.task("test", -1)
    with pytest.raises(UnknownTask, match="Did you mean 'test'"):
        tasks.task("tset", 0)
    with pytest.raises(UnknownTask, match="index must be an integer"):
        tasks.task("test", "0")  # type: ignore[arg-type]
    with pytest.raises(UnknownTask, match=r"train: 8, test: 4"):
        tasks.locate("echo-test-99")


def test_check_finds_what_a_task_author_gets_wrong() -> None:
    class Broken(TaskSet):
        def splits(self) -> list[Split]:
            return [Split("train", "train"), Split("test", "test"), Split("test", "test")]

        def tasks(self, split: str) -> list[Task]:
            return [Task("same"), Task("other")] if split == "train" else [Task("same")]

        def success(self, task: Task, ending: Ending) -> bool:
            return True

    problems = Broken().check()
    assert any("named twice" in p for p in problems)
    assert any("'same' is in train and test" in p for p in problems)
    assert EchoTasks(0.1).check() == []


def test_echo_success_needs_the_greeting_echoed_and_bye() -> None:
    tasks = EchoTasks(0.1)
    task = tasks.task("train", 0)  # greeting "hi"
    assert tasks.success(task, ended(0.1 * len("hibye")))
    assert not tasks.success(task, ended(0.1 * len("bye")))
    assert not tasks.success(task, ended(9.0, terminated=False))
