"""The report's figures against values worked by hand: unbiased pass@k, the success rate
and its standard error with errors kept apart, per task and per difficulty; RFC 013's
shape; a run record read back (and refused when malformed); comparing two reports."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.errors import ArgumentError
from openenv_mcp.evals import EvalReport, RunRecord, compare, pass_at_k


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 2 / 5),  # c / n
        (2, 1 - math.comb(3, 2) / math.comb(5, 2)),  # 1 - 3/10 = 0.7
        (3, 1 - math.comb(3, 3) / math.comb(5, 3)),  # 1 - 1/10 = 0.9
        (4, 1.0),  # n - c = 3 < k: some success is always drawn
        (5, 1.0),
    ],
)
def test_pass_at_k_of_five_samples_two_successes(k: int, expected: float) -> None:
    assert pass_at_k(5, 2, k) == pytest.approx(expected)


def test_pass_at_k_edges() -> None:
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0
    assert pass_at_k(1, 1, 1) == 1.0
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 2, 6), (4, 0, 9), (5, 2, 0), (5, 6, 1), (5, -1, 1)])
def test_pass_at_k_refuses_what_has_no_unbiased_estimate(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match=r"pass@|successes"):
        pass_at_k(n, c, k)


def _run(task: str, index: int, sample: int, success: bool | None, **kw: Any) -> RunRecord:
    error = "the policy raised" if success is None else None
    return RunRecord(task, index, sample, success, error=error, **kw)


def _report() -> EvalReport:
    tasks = [
        {"id": "t0", "difficulty": "easy"},
        {"id": "t1", "difficulty": "hard"},
        {"id": "t2"},
    ]
    runs = [
        _run("t0", 0, 0, True, reward=1.0, steps=10),
        _run("t0", 0, 1, True, reward=1.0, steps=20),
        _run("t1", 1, 0, False, reward=0.0, steps=30),
        _run("t1", 1, 1, None, reward=5.0, steps=3),  # an error: out of success and reward
        _run("t2", 2, 0, False, reward=0.5, steps=40),
        _run("t2", 2, 1, True, reward=2.0, steps=50),
    ]
    config = {"eval_parameters": {"samples": 2}}
    return EvalReport(config=config, tasks=tasks, runs=runs, k=(1, 2), reproducible=True)


def test_scores_keep_errors_apart_from_failures() -> None:
    scores = _report().scores()
    # pass@k counts the error as not passing: t0 2/2, t1 0/2, t2 1/2.
    assert scores["pass@1"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert scores["pass@2"] == pytest.approx((1.0 + 0.0 + 1.0) / 3)
    # success rate over the five runs that ended: 3 of 5.
    assert scores["success_rate"] == pytest.approx(0.6)
    assert scores["success_rate_se"] == pytest.approx(math.sqrt(0.6 * 0.4 / 5))
    assert scores["mean_reward"] == pytest.approx((1 + 1 + 0 + 0.5 + 2) / 5)
    assert scores["mean_steps"] == pytest.approx((10 + 20 + 30 + 40 + 50) / 5)
    assert scores["error_rate"] == pytest.approx(1 / 6)
    assert scores["reproducible"] is True
    assert scores["per_task"]["t1"] == {"n": 2, "successes": 0, "errors": 1, "mean_reward": 0.0}
    assert scores["per_task"]["t0"]["mean_reward"] == 1.0
    by = scores["by_difficulty"]
    assert set(by) == {"easy", "hard", "none"}
    assert by["hard"]["success_rate"] == 0.0 and by["hard"]["error_rate"] == 0.5
    assert by["easy"] == {
        "tasks": 1,
        "runs": 2,
        "success_rate": 1.0,
        "success_rate_se": 0.0,
        "mean_reward": 1.0,
        "mean_steps": 15.0,
        "error_rate": 0.0,
    }


def test_a_report_of_errors_only_has_no_rates_but_says_so() -> None:
    report = EvalReport(
        config={}, tasks=[{"id": "t"}], runs=[_run("t", 0, 0, None)], k=(1,), reproducible=None
    )
    scores = report.scores()
    assert scores["pass@1"] == 0.0
    assert scores["success_rate"] is None and scores["success_rate_se"] is None
    assert scores["error_rate"] == 1.0
    assert "n/a" in report.table()


def test_to_json_is_rfc_013_shaped_and_written_as_json(tmp_path: Path) -> None:
    report = _report()
    data = report.to_json()
    assert set(data) == {"config", "scores"}
    report.write(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(json.dumps(data))
    table = report.table()
    assert "pass@2" in table and "0.600 ± 0.219" in table


def test_a_run_record_round_trips() -> None:
    run = RunRecord("t", 3, 1, True, 2.5, 7, None, {"score": 1.0}, "abc", [{"role": "user"}], 0.5)
    assert RunRecord.from_json(json.loads(json.dumps(run.to_json()))) == run


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "a JSON object"),
        ({"index": 0, "sample": 0, "success": True}, "'task_id'"),
        ({"task_id": "t", "index": "0", "sample": 0, "success": True}, "wrong type"),
        ({"task_id": "t", "index": 0, "sample": 0, "success": "yes"}, "true, false or null"),
        ({"task_id": "t", "index": 0, "sample": 0, "success": True, "scores": []}, "object"),
        ({"task_id": "t", "index": True, "sample": 0, "success": True}, "integer"),
    ],
)
def test_a_malformed_run_record_is_refused_naming_what_is_wrong(data: Any, match: str) -> None:
    with pytest.raises(ArgumentError, match=match):
        RunRecord.from_json(data)


def _rates(**per_task: tuple[int, int]) -> dict[str, Any]:
    return {
        "config": {},
        "scores": {
            "pass@1": sum(c / n for n, c in per_task.values()) / len(per_task),
            "reproducible": True,
            "per_task": {t: {"n": n, "successes": c} for t, (n, c) in per_task.items()},
        },
    }


def test_compare_names_fixed_and_regressed_tasks_and_each_change(tmp_path: Path) -> None:
    old = _rates(a=(4, 0), b=(4, 2), c=(4, 1), gone=(4, 4))
    new = _rates(a=(4, 1), b=(4, 0), c=(4, 3), added=(4, 0))
    (tmp_path / "old.json").write_text(json.dumps(old))
    text = compare(tmp_path / "old.json", new)
    assert "fixed (1): a" in text
    assert "regressed (1): b" in text
    assert "only in the old report (1): gone" in text
    assert "only in the new report (1): added" in text
    assert "pass@1: 0.438 -> 0.250 (-0.188)" in text
    assert "reproducible: true -> true" in text


def test_compare_of_a_report_with_itself_changes_nothing() -> None:
    report = _report().to_json()
    text = compare(report, report)
    assert "fixed (0): none" in text and "regressed (0): none" in text
    assert "(+0.000)" in text


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, "does not exist"),
        ("{not json", "not readable JSON"),
        ('{"scores": {}}', "not an eval report"),
        ("[1, 2]", "not an eval report"),
    ],
)
def test_compare_refuses_what_is_not_a_report(
    tmp_path: Path, content: str | None, match: str
) -> None:
    path = tmp_path / "old.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ArgumentError, match=match):
        compare(path, _report().to_json())


def test_the_envs_own_scores_are_averaged_beside_the_return() -> None:
    runs = [
        _run("t0", 0, 0, False, reward=2.0, scores={"human_normalized": -0.1}),
        _run("t0", 0, 1, True, reward=40.0, scores={"human_normalized": 1.3}),
        _run("t1", 1, 0, None, scores={"human_normalized": 99.0}),  # an error: left out
        _run("t1", 1, 1, False, reward=1.0),  # a run without the score
    ]
    report = EvalReport(
        config={"eval_parameters": {"samples": 2}},
        tasks=[{"id": "t0"}, {"id": "t1"}],
        runs=runs,
        k=(1,),
        reproducible=True,
    )
    scores = report.scores()
    assert scores["mean_human_normalized"] == pytest.approx(0.6)
    assert scores["per_task"]["t0"]["mean_human_normalized"] == pytest.approx(0.6)
    assert "mean_human_normalized" not in scores["per_task"]["t1"]
    assert scores["by_difficulty"]["none"]["mean_human_normalized"] == pytest.approx(0.6)
    assert "mean human normalized  0.600" in report.table()
