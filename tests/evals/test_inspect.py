"""The Inspect AI log an eval writes, opened with Inspect's own ``read_eval_log``: one
sample per task and sample (tasks as samples, samples as epochs), the run's messages,
its scores and metadata; and the clear refusal where inspect-ai is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from openenv_mcp.errors import DependencyNotInstalled
from openenv_mcp.evals import CallablePolicy, EvalReport, RunRecord, evaluate_sync
from openenv_mcp.evals._inspect import write_inspect_log
from tests.servers import memory_server


def _report() -> EvalReport:
    return evaluate_sync(
        memory_server("echo"),
        policy="tests.policies:say_bye_soon",
        samples=3,
        k=(1, 3),
        limit=3,
    )


def test_read_eval_log_opens_one_sample_per_task_and_sample(tmp_path: Path) -> None:
    report = _report()
    path = write_inspect_log(report, tmp_path / "echo.eval")
    log = read_eval_log(str(path))
    assert log.status == "success"
    assert log.eval.task == "openenv-mcp/echo"
    assert log.eval.config.epochs == 3
    assert log.eval.dataset.samples == 3
    assert log.samples is not None and len(log.samples) == 3 * 3
    assert {(s.id, s.epoch) for s in log.samples} == {
        (f"echo-test-{i}", e) for i in range(3) for e in (1, 2, 3)
    }
    by_run = {(r.task_id, r.sample + 1): r for r in report.runs}
    for sample in log.samples:
        run = by_run[(str(sample.id), sample.epoch)]
        assert sample.scores is not None
        assert sample.scores["success"].value == ("C" if run.success else "I")
        assert sample.scores["reward"].value == pytest.approx(run.reward)
        meta = sample.metadata
        assert meta["task_id"] == run.task_id and meta["split"] == "test"
        assert meta["index"] == run.index and meta["steps"] == run.steps == 3
        assert meta["difficulty"] in ("short", "long") and meta["error"] is None
        assert [m.role for m in sample.messages][:3] == ["user", "user", "assistant"]
        assert sample.messages[2].text == "action: message 0"
    assert log.results is not None
    metrics = log.results.scores[0].metrics
    assert metrics["pass@3"].value == pytest.approx(report.scores()["pass@3"])
    assert metrics["success_rate"].value == pytest.approx(report.scores()["success_rate"])


def test_errors_and_agent_messages_reach_the_log(tmp_path: Path) -> None:
    report = EvalReport(
        config={
            "dataset": {"env": "echo", "split": "test", "env_args": []},
            "eval_parameters": {"samples": 1, "policy": "agent"},
        },
        tasks=[{"id": "t", "difficulty": "hard"}],
        runs=[
            RunRecord(
                "t",
                0,
                0,
                None,
                error="the model endpoint answered 500",
                messages=[
                    {"role": "system", "content": "Play."},
                    {"role": "user", "content": "Start."},
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"id": "c1", "function": "reset", "arguments": '{"seed": 1}'},
                            {"id": "c2", "function": "step", "arguments": "not json"},
                        ],
                    },
                    {"role": "tool", "content": "obs", "tool_call_id": "c1", "function": "reset"},
                    {"role": "mystery", "content": {"odd": 1}},
                ],
            )
        ],
    )
    log = read_eval_log(str(write_inspect_log(report, tmp_path / "a.eval")))
    assert log.samples is not None
    (sample,) = log.samples
    assert sample.scores is not None and sample.scores["success"].value == "I"
    assert sample.scores["success"].explanation == "the model endpoint answered 500"
    assert sample.metadata["error"] == "the model endpoint answered 500"
    roles = [m.role for m in sample.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    calls = sample.messages[2].tool_calls  # type: ignore[union-attr]
    assert calls is not None
    assert [c.arguments for c in calls] == [{"seed": 1}, {"raw": "not json"}]
    assert sample.messages[3].tool_call_id == "c1"  # type: ignore[union-attr]


def test_without_inspect_ai_the_log_is_refused_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = evaluate_sync(
        memory_server("echo"), policy=CallablePolicy(lambda o, i: "bye", "bye"), limit=1
    )
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # import fails as if absent
    with pytest.raises(DependencyNotInstalled, match=r"openenv-mcp\[eval\]"):
        write_inspect_log(report, tmp_path / "x.eval")
    assert not (tmp_path / "x.eval").exists()
