"""An eval's runs as an Inspect AI log (a ``.eval`` file ``inspect view`` shows and
``inspect_ai.log.read_eval_log`` opens), written with Inspect's own log API.

The mapping: a task is a sample (its id the task's id) and a run of it is an epoch
(sample ``s`` is epoch ``s + 1``), so ``samples`` runs per task are Inspect's
``epochs``. Each sample holds the run's messages, two scores (``success``: ``C``/``I``,
an error scored ``I`` with the error as its explanation; ``reward``: the return) and
metadata (task id, split, index, difficulty, group, sample, steps, error, the env's
scores). The eval's headline figures are the log's results.

Inspect AI is large (tens of megabytes and a UI stack), so it is an extra
(``pip install 'openenv-mcp[eval]'``) imported only here, on first use.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openenv_mcp.errors import DependencyNotInstalled
from openenv_mcp.evals._report import EvalReport, RunRecord

__all__ = ["write_inspect_log"]

INSTALL = "pip install 'openenv-mcp[eval]' (or inspect-ai>=0.3.285,<0.4)"


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"the Inspect AI log needs inspect-ai, which is not installed ({exc}): {INSTALL}"
        ) from None
    return log


def _messages(run: RunRecord) -> list[Any]:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall

    out: list[Any] = []
    for message in run.messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, default=repr)
        if role == "system":
            out.append(ChatMessageSystem(content=text))
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or []:
                arguments = call.get("arguments")
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except json.JSONDecodeError:
                        arguments = {"raw": arguments}
                calls.append(
                    ToolCall(
                        id=str(call.get("id", "")),
                        function=str(call.get("function", "")),
                        arguments=arguments
                        if isinstance(arguments, dict)
                        else {"value": arguments},
                    )
                )
            out.append(ChatMessageAssistant(content=text, tool_calls=calls or None))
        elif role == "tool":
            out.append(
                ChatMessageTool(
                    content=text,
                    tool_call_id=message.get("tool_call_id"),
                    function=message.get("function"),
                )
            )
        else:
            out.append(ChatMessageUser(content=text))
    return out


def write_inspect_log(report: EvalReport, path: str | Path) -> Path:
    """Write ``report``'s runs as an Inspect AI ``.eval`` log at ``path``.

    Returns:
        The path written.

    Raises:
        DependencyNotInstalled: inspect-ai is not installed (the message says how to
            install it).
    """
    log = _inspect()
    from inspect_ai.scorer import CORRECT, INCORRECT, Score

    dataset = report.config["dataset"]
    parameters = report.config["eval_parameters"]
    scores = report.scores()
    tasks = {str(t["id"]): t for t in report.tasks}
    now = datetime.now(UTC).isoformat()
    samples = []
    for run in report.runs:
        task = tasks.get(run.task_id, {})
        success = Score(
            value=CORRECT if run.success else INCORRECT,
            answer="success" if run.success else "error" if run.error else "failure",
            explanation=run.error,
        )
        messages = _messages(run)
        samples.append(
            log.EvalSample(
                id=run.task_id,
                epoch=run.sample + 1,
                input=f"task {run.task_id} of {dataset['env']}'s {dataset['split']} split",
                target="success",
                messages=messages,
                scores={"success": success, "reward": Score(value=run.reward)},
                metadata={
                    "task_id": run.task_id,
                    "split": dataset["split"],
                    "index": run.index,
                    "sample": run.sample,
                    "difficulty": task.get("difficulty"),
                    "group": task.get("group"),
                    "steps": run.steps,
                    "success": run.success,
                    "error": run.error,
                    "scores": run.scores,
                },
                total_time=run.seconds,
            )
        )
    metrics = {
        name: log.EvalMetric(name=name, value=value)
        for name, value in scores.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    results = log.EvalResults(
        total_samples=len(report.tasks) * int(parameters["samples"]),
        completed_samples=len(report.runs),
        scores=[
            log.EvalScore(name="success", scorer="success", metrics=metrics),
        ],
    )
    eval_log = log.EvalLog(
        status="success",
        eval=log.EvalSpec(
            created=now,
            task=f"openenv-mcp/{dataset['env']}",
            task_args={"split": dataset["split"], "env_args": dataset.get("env_args", [])},
            dataset=log.EvalDataset(
                name=f"{dataset['env']}/{dataset['split']}",
                samples=len(report.tasks),
                sample_ids=[str(t["id"]) for t in report.tasks],
            ),
            model=f"policy/{parameters['policy']}",
            config=log.EvalConfig(epochs=int(parameters["samples"])),
            packages=dict(report.config.get("library_versions", {})),
            metadata={"openenv_mcp": report.config, "reproducible": report.reproducible},
        ),
        results=results,
        stats=log.EvalStats(started_at=now, completed_at=now),
        samples=samples,
    )
    out = Path(path)
    log.write_eval_log(eval_log, str(out), format="eval")
    return out
