"""The random and callable policies, played in memory on real environments (echo's task
set, Gymnasium's CartPole-v1 and Taxi-v4): what a policy gets, what ends a run as an
error (a raise, an illegal action, the step cap) while the eval goes on, and how a
``--policy`` spec is read and refused."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from openenv_mcp.errors import ArgumentError
from openenv_mcp.evals import (
    CallablePolicy,
    EvalReport,
    RandomPolicy,
    TaskOutcome,
    TaskRun,
    evaluate,
    policy_from_spec,
)
from openenv_mcp.evals._policies import load_callable, observation_digest
from tests.servers import ROOT, memory_server

pytestmark = pytest.mark.anyio
CARTPOLE = ("gymnasium", "--id", "CartPole-v1", "--no-render")


async def _eval(env: tuple[str, ...], policy: Any, **options: Any) -> EvalReport:
    return await evaluate(memory_server(*env), policy=policy, **options)


# -- specs -----------------------------------------------------------------------------------


def test_random_and_callables_by_spec(tmp_path: Path) -> None:
    assert isinstance(policy_from_spec("random"), RandomPolicy)
    by_module = policy_from_spec("tests.policies:balancer")
    assert isinstance(by_module, CallablePolicy) and by_module.name == "tests.policies:balancer"
    path = tmp_path / "mine.py"
    path.write_text("def go(observation, info):\n    return 1\n")
    by_file = policy_from_spec(f"{path}:go")
    assert isinstance(by_file, CallablePolicy) and by_file.choose(None, {}) == 1
    mine = RandomPolicy()
    assert policy_from_spec(mine) is mine


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nowhere.py:go", "there is no file"),
        ("{tmp}/mine.py:absent", r"has no 'absent' \(it has: go, value\)"),
        ("{tmp}/mine.py:value", "is a int, not a function"),
        ("{tmp}/broken.py:go", "importing .* raised ZeroDivisionError"),
        ("{tmp}/mine.py:1x", "after the file comes a name"),
        ("tests.no_such_module:go", "no_such_module"),
        ("greedy", "--policy takes random, FILE.py:NAME or module:NAME"),
        ("my agent --flag x:y", "--policy takes random"),
    ],
)
def test_a_policy_spec_that_names_nothing_playable_is_refused(
    tmp_path: Path, spec: str, match: str
) -> None:
    (tmp_path / "mine.py").write_text("value = 3\n\ndef go(observation, info):\n    return 1\n")
    (tmp_path / "broken.py").write_text("1 / 0\n")
    with pytest.raises(ArgumentError, match=match):
        policy_from_spec(spec.replace("{tmp}", str(tmp_path)))


def test_a_file_policy_is_loaded_by_its_path_not_by_sys_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "policy.py").write_text("def go(o, i):\n    return 'a'\n")
    (tmp_path / "b" / "policy.py").write_text("def go(o, i):\n    return 'b'\n")
    first = load_callable(f"{tmp_path / 'a' / 'policy.py'}:go")
    second = load_callable(f"{tmp_path / 'b' / 'policy.py'}:go")
    assert (first(None, {}), second(None, {})) == ("a", "b")


def test_observation_digest_is_stable_and_tells_apart() -> None:
    frame = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert observation_digest(frame) == observation_digest(frame.copy())
    assert observation_digest(frame) != observation_digest(frame.astype(np.int16))
    assert observation_digest(frame) != observation_digest(frame.reshape(4, 3))
    assert observation_digest({"a": 1, "b": [2, 3]}) == observation_digest({"b": [2, 3], "a": 1})
    assert observation_digest("hello") != observation_digest("hello ")


# -- playing -----------------------------------------------------------------------------------


async def test_a_callable_gets_the_run_in_info_and_async_callables_are_awaited() -> None:
    seen: list[dict[str, Any]] = []

    async def polite(observation: Any, info: dict[str, Any]) -> str:
        seen.append(info["eval"])
        return "bye"

    report = await _eval(("echo",), CallablePolicy(polite, "polite"), samples=2, limit=1)
    assert {run["sample"] for run in seen} == {0, 1}
    assert {run["task_id"] for run in seen} == {"echo-test-0"}
    assert len({run["seed"] for run in seen}) == 2  # each run seeds its own randomness
    assert [r.steps for r in report.runs] == [1, 1]


async def test_the_noisy_balancer_replays_exactly_from_its_seed() -> None:
    options: dict[str, Any] = {"samples": 2, "limit": 2, "seed": 5}
    first = await _eval(CARTPOLE, "tests.policies:noisy_balancer", **options)
    second = await _eval(CARTPOLE, "tests.policies:noisy_balancer", **options)
    assert [(r.steps, r.success) for r in first.runs] == [(r.steps, r.success) for r in second.runs]
    other = await _eval(CARTPOLE, "tests.policies:noisy_balancer", **{**options, "seed": 6})
    assert [r.steps for r in other.runs] != [r.steps for r in first.runs]


async def test_a_policy_that_raises_errs_its_runs_and_the_eval_goes_on() -> None:
    report = await _eval(CARTPOLE, "tests.policies:raises", samples=2, limit=2)
    assert len(report.runs) == 4
    assert all(r.success is None and r.steps == 2 for r in report.runs)
    assert all(
        "the policy raised ValueError: the policy's bug" in str(r.error) for r in report.runs
    )
    scores = report.scores()
    assert scores["error_rate"] == 1.0 and scores["pass@1"] == 0.0
    assert scores["success_rate"] is None


async def test_an_illegal_action_errs_the_run_with_the_servers_reason() -> None:
    report = await _eval(CARTPOLE, "tests.policies:illegal", samples=1, limit=2)
    assert len(report.runs) == 2
    for run in report.runs:
        assert run.success is None and run.steps == 0
        assert run.error is not None and run.error.startswith("step 1 refused:")
        assert "7" in run.error


async def test_the_step_cap_errs_a_run_still_going() -> None:
    report = await _eval(CARTPOLE, "tests.policies:balancer", samples=1, limit=1, max_steps=30)
    (run,) = report.runs
    assert run.steps == 30 and run.success is None
    assert run.error == "still running after max_steps=30 steps"


async def test_the_random_policy_respects_the_action_mask() -> None:
    # Taxi-v4 sends info["action_mask"] and the server refuses a masked action: a random
    # policy that ignored it would err within a few steps.
    taxi = ("gymnasium", "--id", "Taxi-v4", "--no-render")
    report = await _eval(taxi, "random", samples=2, limit=2)
    assert [r.error for r in report.runs] == [None] * 4
    assert max(r.steps for r in report.runs) == 200  # up to Taxi's time limit, no refusal
    assert all(r.steps >= 20 for r in report.runs)


async def test_a_policy_that_raises_instead_of_returning_an_error_errs_only_its_run() -> None:
    class Clumsy:
        name = "clumsy"

        async def play(self, session: Any, run: TaskRun) -> TaskOutcome:
            if run.sample == 1:
                raise RuntimeError("not meant to raise")
            return TaskOutcome(success=True, steps=1, reward=1.0)

    report = await _eval(("echo",), Clumsy(), samples=2, k=(1, 2), limit=2)
    assert [r.error for r in report.runs] == [
        None,
        "RuntimeError: not meant to raise",
        None,
        "RuntimeError: not meant to raise",
    ]
    assert report.scores()["pass@2"] == 1.0 and report.scores()["pass@1"] == 0.5


async def test_a_transcript_is_kept_short_for_the_log() -> None:
    report = await _eval(CARTPOLE, "tests.policies:balancer", samples=1, limit=1)
    (run,) = report.runs
    assert run.success is True and run.steps == 500
    contents = [m["content"] for m in run.messages]
    assert contents[0].startswith("task ") and contents[0].endswith(
        "(split test, index 0), sample 0"
    )
    assert "(480 more steps)" in contents
    assert contents[-1] == "success after 500 steps, return 500"
    assert len(run.messages) == 2 + 2 * 20 + 2


def test_the_helper_policies_file_has_the_balancers() -> None:
    text = (ROOT / "tests" / "policies.py").read_text()
    assert "def noisy_balancer" in text and textwrap.dedent("EPSILON = 0.2") in text
