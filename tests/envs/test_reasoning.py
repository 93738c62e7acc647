"""Reasoning: reasoning-gym's real datasets, one question an episode, scored by the
dataset's own checker; served over MCP in memory and over stdio to the stock MCP SDK
client, its task set, and what a stranger's bad input gets."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
import pytest
import reasoning_gym
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from openenv_mcp.authoring.check import run_checks
from openenv_mcp.authoring.testing import check_env
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.environment import parse_options
from openenv_mcp.errors import (
    ArgumentError,
    InvalidAction,
    ResetNeeded,
    UnknownTask,
    UnsupportedOption,
)
from openenv_mcp.options import make_config
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending, TaskSampler
from openenv_mcp_envs.reasoning import ReasoningConfig, ReasoningEnv, ReasoningTasks
from openenv_mcp_envs.reasoning._problems import DEFAULT_DATASETS, make_problem
from openenv_mcp_envs.reasoning.env import MAX_ANSWER
from tests.servers import stdio_command

pytestmark = pytest.mark.anyio


def make(**options: Any) -> ReasoningEnv:
    return ReasoningEnv(make_config(ReasoningConfig, options, "reasoning"))


def answer_of(info: dict[str, Any]) -> str:
    """The right answer to the question ``info`` describes: reasoning-gym's own entry's
    (the entry is reasoning-gym's, test_a_problem_is_reasoning_gyms_own_entry)."""
    problem = make_problem(info["dataset"], info["level"], info["seed"], info["entry"])
    return str(problem["answer"])


# -- the problems are reasoning-gym's -----------------------------------------------------------


@pytest.mark.parametrize("name", DEFAULT_DATASETS)
def test_a_problem_is_reasoning_gyms_own_entry(name: str) -> None:
    """Entry n of seed s is what reasoning-gym's create_dataset(name, seed=s) gives at n,
    at level 0's curriculum configuration (the copy with another seed included)."""
    from reasoning_gym.factory import create_curriculum

    curriculum = create_curriculum(name)
    curriculum.set_global_level(1)
    config = curriculum.generate_configuration({"seed": 1_000_000, "size": 50})
    theirs = reasoning_gym.create_dataset(name, **vars(config))[7]
    ours = make_problem(name, 1, 1_000_000, 7)
    assert (ours["question"], ours["answer"]) == (theirs["question"], theirs["answer"])


def test_the_right_answer_scores_1_a_wrong_one_less_and_the_episode_ends() -> None:
    env = make()
    for seed in range(12):
        question, info = env.reset(seed=seed)
        assert question and info["answered"] is False and info["score"] is None
        result = env.step(env.parse_action(answer_of(info)))
        assert (result.reward, result.terminated, result.truncated) == (1.0, True, False)
        assert result.info["score"] == 1.0 and result.observation == question
        with pytest.raises(ResetNeeded, match="answered: reset for the next one"):
            env.step("again")
        env.reset(seed=seed)
        wrong = env.step(env.parse_action("certainly not the answer"))
        assert wrong.reward < 1.0 and wrong.terminated


def test_same_seed_and_options_same_question_and_unseeded_resets_continue_the_stream() -> None:
    env = make()
    first = env.reset(seed=5, options={"dataset": "mini_sudoku", "level": 2, "entry": 3})
    again = make().reset(seed=5, options={"dataset": "mini_sudoku", "level": 2, "entry": 3})
    assert first == again and first[1]["dataset"] == "mini_sudoku"
    env.reset(seed=9)
    a = [env.reset()[0] for _ in range(5)]
    env.reset(seed=9)
    assert [env.reset()[0] for _ in range(5)] == a
    assert len(set(a)) > 1


def test_contract_check_in_memory() -> None:
    check_env(ReasoningEnv, worker=False)
    check_env(ReasoningEnv, worker=False, datasets=["count_bits", "gcd"], levels=[0, 3])


@pytest.mark.integration  # starts a worker process, and `check` a stdio server
def test_check_env_in_a_worker_and_openenv_mcp_check() -> None:
    check_env(ReasoningEnv)
    lines = run_checks("reasoning", [])
    failed = {line.name: line.detail for line in lines if not line.ok}
    assert not failed, failed


def test_snapshots_restore_the_question_and_whether_it_was_answered() -> None:
    env = make()
    question, info = env.reset(seed=3)
    saved = env.snapshot()
    assert env.step(env.parse_action(answer_of(info))).reward == 1.0
    env.restore(saved)
    assert env.state()["answered"] is False
    assert env.step(env.parse_action("nope")).observation == question
    with pytest.raises(UnsupportedOption, match="expected a reasoning snapshot"):
        env.restore(("not", "one"))


# -- the task set ------------------------------------------------------------------------------


def test_task_set_checks_and_is_cheap_to_list() -> None:
    tasks = make().task_set()
    assert isinstance(tasks, ReasoningTasks) and tasks is make().task_set()  # one per config
    assert tasks.check() == []
    sizes = {s.name: len(tasks.split_tasks(s.name)) for s in tasks.splits()}
    combos = len(DEFAULT_DATASETS) * 3
    assert sizes == {"train": 1000 * combos, "validation": 100 * combos, "test": 100 * combos}
    first = tasks.split_tasks("test")[:combos]  # interleaved: every dataset and level
    assert {(t.group, t.difficulty) for t in first} == {
        (name, f"level{level}") for name in DEFAULT_DATASETS for level in (0, 1, 2)
    }
    seeds = {split: {t.seed for t in tasks.split_tasks(split)[:50]} for split in sizes}
    assert seeds == {"train": {0}, "validation": {1_000_000}, "test": {2_000_000}}
    small = make(train_size=0, validation_size=0, test_size=3, levels=[1])
    assert [s.name for s in small.task_set().splits()] == ["test"]


def test_task_ids_are_stable_and_located_and_data_holds_no_answer() -> None:
    tasks = make().task_set()
    task = tasks.task("validation", 52)  # 2 * 18 + 16: mini_sudoku (the 6th), level 1
    assert task.id == "reasoning-mini_sudoku-level1-validation-0002"
    assert task.options == {"dataset": "mini_sudoku", "level": 1, "entry": 2}
    assert tasks.locate(task.id) == ("validation", 52, task)
    problem = make_problem("mini_sudoku", 1, 1_000_000, 2)
    assert task.data == {"question": problem["question"]}
    assert problem["answer"] not in json.dumps(task.to_json())
    for bad in (
        "reasoning-mini_sudoku-level1-validation-2",  # not the id's spelling
        "reasoning-mini_sudoku-level7-validation-0002",  # a level not served
        "reasoning-gcd-level1-validation-0002",  # a dataset not served
        "reasoning-mini_sudoku-level1-validation-0100",  # past the split
        "reasoning-mini_sudoku-level1-dev-0001",
        "x" * 500,
    ):
        with pytest.raises(UnknownTask, match="ids are reasoning-DATASET-levelL-SPLIT-NNNN"):
            tasks.locate(bad)


def test_success_is_a_score_of_exactly_one() -> None:
    tasks = make().task_set()
    task = tasks.task("test", 0)

    def ending(score: float | None, terminated: bool = True) -> Ending:
        return Ending(score or 0.0, score or 0.0, 1, terminated, False, {"score": score})

    assert tasks.success(task, ending(1.0))
    assert not tasks.success(task, ending(0.999))
    assert not tasks.success(task, ending(None))
    assert not tasks.success(task, ending(1.0, terminated=False))
    assert tasks.scores(task, ending(0.25)) == {"score": 0.25}


def test_a_sampler_over_a_split_draws_its_tasks() -> None:
    split = make(test_size=4).task_set().split_tasks("test")
    sampler = TaskSampler(split, "uniform", seed=0)
    assert {sampler.next().id for _ in range(3000)} == {t.id for t in split}  # 72 tasks


# -- over MCP ----------------------------------------------------------------------------------


async def test_tasks_over_mcp_in_memory() -> None:
    with anyio.fail_after(120):
        async with MCPEnvClient(build_server("reasoning")) as env:
            question, info = await env.reset(options={"split": "test", "index": 5})
            task = info["task"]
            assert task["id"] == "reasoning-chain_sum-level2-test-0000"
            assert task["data"] == {"question": question} and task["group"] == "chain_sum"
            _, reward, terminated, _, info = await env.step(answer_of(info))
            assert (reward, terminated) == (1.0, True)
            assert info["task"]["success"] is True and info["task"]["scores"] == {"score": 1.0}
            again, info = await env.reset(options={"task": task["id"]})
            assert again == question
            _, reward, _, _, info = await env.step("a wrong answer")
            assert reward < 1.0 and info["task"]["success"] is False
            with pytest.raises(ResetNeeded):
                await env.step("a second answer")
            await env.reset(options={"task": task["id"]})
            with pytest.raises(InvalidAction, match="expected the answer as a string, got int"):
                await env.step(42)
            with pytest.raises(InvalidAction, match=f"at most {MAX_ANSWER} characters"):
                await env.step("9" * (MAX_ANSWER + 1))
            # neither refused answer used up the question
            _, reward, *_ = await env.step(answer_of(info))
            assert reward == 1.0


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"dataset": "basic_arithmetc"}, UnsupportedOption, "Did you mean 'basic_arithmetic'"),
        ({"dataset": "composite"}, UnsupportedOption, "has no curriculum"),
        ({"dataset": "gcd", "level": 9}, UnsupportedOption, "curriculum levels 0-3, got level 9"),
        ({"entry": -1}, UnsupportedOption, "entry"),
        ({"level": "hard"}, UnsupportedOption, "level"),
        ({"task": "reasoning-gcd-level0-test-0000"}, UnknownTask, "datasets basic_arithmetic"),
        ({"split": "test", "index": 10**6}, UnknownTask, "has 1800 tasks"),
    ],
)
async def test_bad_reset_options_are_refused_clearly(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with anyio.fail_after(60):
        async with MCPEnvClient(build_server("reasoning")) as env:
            with pytest.raises(error) as caught:
                await env.reset(options=options)
            assert words in str(caught.value)
            question, _ = await env.reset(seed=1)  # the server serves on
            assert question


def test_bad_config_is_refused_at_construction() -> None:
    with pytest.raises(ArgumentError, match="Did you mean 'leg_counting'"):
        make(datasets=["leg_countin"])
    with pytest.raises(ArgumentError, match="curriculum levels 0-3, got level 5"):
        make(datasets=["gcd"], levels=[5])
    with pytest.raises(ArgumentError, match="each dataset once"):
        make(datasets=["gcd", "gcd"])
    with pytest.raises(ArgumentError, match="rejects dataset 'caesar_cipher' at level 3"):
        make(datasets=["caesar_cipher"], levels=[3])
    assert parse_options(make(), {"entry": 4}) == {"entry": 4}


@pytest.mark.integration
async def test_a_task_over_stdio_with_the_stock_mcp_sdk_client() -> None:
    command = stdio_command("reasoning", "--datasets", "count_bits", "--levels", "1")
    params = StdioServerParameters(command=command[0], args=command[1:])
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"reset", "step", "state"} <= tools
            reset = await session.call_tool(
                "reset", {"options": {"task": "reasoning-count_bits-level1-test-0004"}}
            )
            assert not reset.is_error, reset
            content = reset.structured_content
            assert content is not None
            question = content["observation"]
            assert "How many 1 bits" in question
            assert content["task"]["data"] == {"question": question}
            right = answer_of(content["info"])
            step = await session.call_tool("step", {"action": right})
            assert not step.is_error, step
            assert step.structured_content is not None
            assert step.structured_content["reward"] == 1.0
            assert step.structured_content["task"]["success"] is True
            bad = await session.call_tool("step", {"action": 7})
            assert bad.is_error


@pytest.mark.integration  # a fresh interpreter
def test_import_openenv_mcp_does_not_import_reasoning_gym() -> None:
    probe = (
        "import sys, openenv_mcp, openenv_mcp.tasks, openenv_mcp.registry\n"
        "openenv_mcp.registry.env_names()\n"
        "print('reasoning_gym' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "False"
