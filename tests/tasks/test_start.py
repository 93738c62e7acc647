"""How a reset's options name a task, and what they become: every way a caller can get
it wrong is refused, saying what was expected and what came."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ArgumentError, UnknownTask, UnsupportedOption
from openenv_mcp.tasks import start_task
from openenv_mcp_envs.echo.env import EchoTasks

TASKS = EchoTasks(0.1)


def test_options_that_name_no_task_start_none() -> None:
    assert start_task(TASKS, "echo", 3, None) is None
    assert start_task(TASKS, "echo", 3, {"greeting": "x"}) is None
    assert start_task(None, "echo", None, {"greeting": "x"}) is None


def test_a_task_by_index_or_by_id_becomes_its_seed_and_options() -> None:
    by_index = start_task(TASKS, "echo", None, {"split": "test", "index": 2})
    by_id = start_task(TASKS, "echo", None, {"task": "echo-test-2"})
    assert by_index == by_id and by_index is not None
    assert (by_index.seed, by_index.options) == (2, {"greeting": "good evening, friend"})
    assert by_index.to_json() == {
        "id": "echo-test-2",
        "split": "test",
        "index": 2,
        "difficulty": "long",
        "data": {"greeting": "good evening, friend"},
    }


def test_the_callers_seed_or_options_may_agree_with_the_task_never_contradict_it() -> None:
    same = start_task(TASKS, "echo", 1, {"task": "echo-test-1", "greeting": "howdy"})
    assert same is not None and same.seed == 1
    with pytest.raises(ArgumentError, match="starts from seed 1; reset got seed 5"):
        start_task(TASKS, "echo", 5, {"task": "echo-test-1"})
    with pytest.raises(ArgumentError, match="sets option 'greeting' to 'howdy'; reset got 'yo'"):
        start_task(TASKS, "echo", None, {"task": "echo-test-1", "greeting": "yo"})


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"split": "test"}, ArgumentError, "needs both 'split'"),
        ({"index": 0}, ArgumentError, "needs both 'split'"),
        ({"split": 0, "index": 0}, ArgumentError, "needs both 'split'"),
        ({"task": "echo-test-0", "index": 0}, ArgumentError, "not both"),
        ({"task": 7}, ArgumentError, "must be a task id"),
        ({"task": "nope"}, UnknownTask, "no task 'nope'"),
        ({"split": "test", "index": 10**12}, UnknownTask, "has 4 tasks"),
        ({"split": "test", "index": "1"}, UnknownTask, "index must be an integer"),
        ({"split": "validation", "index": 0}, UnknownTask, "Splits: train, test"),
    ],
)
def test_a_stranger_naming_a_task_wrongly_is_told_what_is_expected(
    options: dict, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        start_task(TASKS, "echo", None, options)


def test_an_env_without_tasks_refuses_the_task_options_by_name() -> None:
    with pytest.raises(UnsupportedOption, match="coin publishes no tasks"):
        start_task(None, "coin", None, {"split": "test", "index": 0})
