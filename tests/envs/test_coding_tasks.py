"""The coding env's task set: its programming tasks in splits fixed by their names, ids
that are the tasks' own names, data without the hidden tests, and success as passing
every hidden test, judged at the end of real episodes over MCP (every run in real
bubblewrap: those tests are in the integration tier)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending, UnknownTask
from openenv_mcp_envs.coding import CodingConfig, CodingEnv, builtin_tasks
from openenv_mcp_envs.coding._tasks import CodingTasks, coding_tasks, split_of
from tests.servers import ensure_installed

#: Seconds any one MCP conversation here may take.
LIMIT = 120
SMALL: dict[str, Any] = {"wall_seconds": 5.0, "cpu_seconds": 2, "memory_mib": 256}
FIZZBUZZ = (
    "def fizzbuzz(n):\n    return ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0"
    " else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, n + 1)]\n"
)
#: The split of every built-in task (a change here moves tasks between splits: don't).
SPLITS = {
    "train": [
        "balanced_brackets",
        "caesar_cipher",
        "flatten",
        "is_palindrome",
        "merge_intervals",
        "reverse_words",
        "run_length_encode",
        "to_roman",
    ],
    "validation": ["is_prime", "word_count"],
    "test": ["fizzbuzz", "max_subarray", "two_sum"],
}


@pytest.fixture(scope="module")
def bwrap() -> str:
    """Debian's bubblewrap, installed where missing (skips, saying why, where it cannot be)."""
    out = ensure_installed("ensure_debian.sh", "bubblewrap", "bubblewrap", "bwrap")
    line = out.strip().splitlines()[-1]
    assert line.startswith("BWRAP="), out
    return line.split("=", 1)[1]


@pytest.fixture
def tasks() -> CodingTasks:
    return coding_tasks(builtin_tasks())


# -- the set (in memory) ------------------------------------------------------------------------


def test_the_built_in_tasks_keep_their_splits(tasks: CodingTasks) -> None:
    assert [(s.name, s.type) for s in tasks.splits()] == [
        ("train", "train"),
        ("validation", "validation"),
        ("test", "test"),
    ]
    assert {s.name: [t.id for t in tasks.tasks(s.name)] for s in tasks.splits()} == SPLITS
    assert tasks.check() == []
    assert coding_tasks(builtin_tasks()) is tasks  # one set per set of tasks


def test_a_split_is_its_name_hash_modulo_ten() -> None:
    for name in ("fizzbuzz", "add", "two_sum", "x" * 64):
        bucket = int(hashlib.sha256(name.encode()).hexdigest(), 16) % 10
        assert split_of(name) == ("train" if bucket < 6 else "validation" if bucket < 8 else "test")


def test_ids_are_names_and_data_holds_no_test(tasks: CodingTasks) -> None:
    by_name = {p.name: p for p in builtin_tasks()}
    for split in tasks.splits():
        for index, task in enumerate(tasks.tasks(split.name)):
            problem = by_name[task.id]
            assert dict(task.options) == {"task": task.id} and task.seed is None
            assert task.data == {
                "title": problem.title,
                "prompt": problem.prompt,
                "entry_point": problem.entry_point,
                "signature": problem.signature,
                "tests": len(problem.tests),
            }
            # the hidden tests never travel (a prompt's own worked example aside)
            seen = {k: v for k, v in task.data.items() if k != "prompt"}
            rest = json.dumps({**task.to_json(), "data": seen})
            for test in problem.tests:
                assert json.dumps({"args": test.args}) not in rest
                assert f"{json.dumps(test.expected)}," not in rest
            assert tasks.locate(task.id) == (split.name, index, task)


def test_unknown_ids_name_the_tasks(tasks: CodingTasks) -> None:
    with pytest.raises(UnknownTask, match=r"Did you mean 'fizzbuzz'\?.*Tasks: balanced_brackets"):
        tasks.locate("fizbuzz")
    for stranger in ("chess-easy-test-0000", "echo-test-1", "", "fizzbuzz " * 40):
        with pytest.raises(UnknownTask, match="no task"):
            tasks.locate(stranger)


def test_success_is_every_test_passed(tasks: CodingTasks) -> None:
    task = tasks.task("test", 0)
    assert tasks.success(task, Ending(1.0, 1.0, 1, True, False, {"score": 1.0}))
    assert not tasks.success(task, Ending(0.5, 0.5, 1, False, True, {"score": 0.5}))
    assert not tasks.success(task, Ending(1.0, 1.0, 3, False, True, {"score": 1.0}))
    assert not tasks.success(task, Ending(1.0, 1.0, 1, True, False, {"score": "1.0"}))
    assert not tasks.success(task, Ending(1.0, 1.0, 1, True, False, {}))


# -- the env and MCP (real sandbox) --------------------------------------------------------------


@pytest.mark.integration
def test_a_task_file_gets_its_own_set(bwrap: str, tmp_path: Path) -> None:
    def problem(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "prompt": f"Return {name}.",
            "entry_point": name,
            "tests": [{"args": [], "expected": name}],
        }

    file = tmp_path / "tasks.json"
    file.write_text(json.dumps([problem("sub"), problem("neg"), problem("add")]))
    env = CodingEnv(CodingConfig(sandbox="bwrap", task_file=str(file), **SMALL))
    try:
        tasks = env.task_set()
        assert env.task_set() is tasks
        # sub and neg are train, add validation; no test split at all
        assert [s.name for s in tasks.splits()] == ["train", "validation"]
        assert [t.id for t in tasks.tasks("train")] == ["neg", "sub"]
        with pytest.raises(UnknownTask, match="no split 'test'"):
            tasks.task("test", 0)
        assert tasks.check() == []
    finally:
        env.close()


@pytest.fixture(scope="module")
def server(bwrap: str) -> Iterator[Any]:
    yield build_server("coding", sandbox="bwrap", max_steps=2, **SMALL)


@pytest.mark.integration
def test_splits_over_mcp_and_a_task_twice(server: Any) -> None:
    async def main() -> tuple[list[dict[str, Any]], list[Any]]:
        firsts = []
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(server) as client:
                for options in (
                    {"split": "validation", "index": 1},
                    {"task": "word_count"},
                    {"split": "validation", "index": 1},
                ):
                    obs, info = await client.reset(options=options)
                    firsts.append((obs, info["task"]))
                return client.splits, firsts

    splits, firsts = anyio.run(main)
    assert splits == [
        {"name": "train", "type": "train", "tasks": 8},
        {"name": "validation", "type": "validation", "tasks": 2},
        {"name": "test", "type": "test", "tasks": 3},
    ]
    assert firsts[0] == firsts[1] == firsts[2]
    obs, task = firsts[0]
    assert obs["task"] == "word_count" and task["id"] == "word_count"
    assert task["split"] == "validation" and task["index"] == 1
    assert task["data"]["entry_point"] == "word_count" and "tests" in task["data"]


@pytest.mark.integration
def test_a_correct_solution_succeeds_and_a_wrong_one_fails(server: Any) -> None:
    async def main() -> list[dict[str, Any]]:
        ends = []
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(server) as client:
                await client.reset(options={"split": "test", "index": 0})
                *_, terminated, _, info = await client.step({"solution": FIZZBUZZ})
                assert terminated
                ends.append(info["task"])
                await client.reset(options={"task": "fizzbuzz"})
                wrong = "def fizzbuzz(n):\n    return [str(i) for i in range(1, n + 1)]\n"
                for _ in range(2):  # max_steps 2: the second step ends it, truncated
                    obs, _, terminated, truncated, info = await client.step({"solution": wrong})
                assert truncated and not terminated and obs["tests_passed"] > 0
                ends.append(info["task"])
        return ends

    right, wrong = anyio.run(main)
    assert right["id"] == "fizzbuzz" and right["success"] is True
    assert wrong["id"] == "fizzbuzz" and wrong["success"] is False


@pytest.mark.integration
def test_bad_starts_are_refused_clearly(server: Any) -> None:
    async def main() -> list[tuple[str, str]]:
        refused = []
        with anyio.fail_after(LIMIT):
            async with MCPEnvClient(server) as client:
                for options in (
                    {"split": "test", "index": 3},
                    {"split": "tests", "index": 0},
                    {"split": "test", "index": -1},
                    {"task": "fizbuzz"},
                    {"task": "chess-easy-test-0000"},
                    {"task": "fizzbuzz", "split": "test", "index": 0},
                    {"task": 7},
                ):
                    try:
                        await client.reset(options=options)
                    except (UnknownTask, ArgumentError) as exc:
                        refused.append((type(exc).__name__, str(exc)))
                obs, _ = await client.reset(options={"task": "two_sum"})  # it goes on
                assert obs["task"] == "two_sum"
        return refused

    refused = anyio.run(main)
    texts = [text for _, text in refused]
    assert len(refused) == 7, refused
    assert [kind for kind, _ in refused] == ["UnknownTask"] * 5 + ["ArgumentError"] * 2
    assert "has 3 tasks (indices 0-2), got index 3" in texts[0]
    assert "Did you mean 'test'?" in texts[1]
    assert "got index -1" in texts[2]
    assert "Did you mean 'fizzbuzz'?" in texts[3]
    assert "no task 'chess-easy-test-0000'" in texts[4] and "Tasks: " in texts[4]
    assert "not both" in texts[5]
    assert "must be a task id" in texts[6]
