"""An eval's figures: unbiased pass@k, success rate and its standard error, rewards,
steps, errors, per task and per difficulty, in the shape of OpenEnv's RFC 013
``EvalResult`` (``{"config": {...}, "scores": {...}}``), and the comparison of two reports.

Choices, once:

* **An error is not a failure.** A run that did not end (the policy raised, the server
  refused an action, the step cap) counts in ``error_rate`` and is left out of
  ``success_rate`` (and of ``mean_reward``/``mean_steps``); ``success_rate`` is the
  share of the runs that ended which succeeded. pass@k counts every attempted sample,
  an error as not passing, so it stays defined for every task that has ``samples >= k``.
* **pass@k** is Chen et al.'s unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per task
  (``n`` samples, ``c`` successes), averaged over tasks. ``k > n`` has no unbiased
  estimate: :func:`pass_at_k` refuses it, and :func:`~openenv_mcp.evals.evaluate`
  refuses a ``k`` above ``samples`` before playing anything.
* **The standard error** of ``success_rate`` is the binomial one over runs,
  ``sqrt(p (1 - p) / N)`` with ``N`` the runs that ended (runs of one task are not
  independent draws of the task population; with one sample per task it is exact).
* **Fixed and regressed** (:func:`compare`): a task is fixed when no run of it succeeded
  before and at least one does now, regressed the other way round.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_mcp.errors import ArgumentError

__all__ = ["EvalReport", "RunRecord", "compare", "pass_at_k"]

HARNESS_NAME = "openenv-mcp"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task: the chance that at least one of ``k`` samples
    drawn without replacement from ``n`` (``c`` of them successes) succeeds.

    Args:
        n: samples played.
        c: samples that succeeded.
        k: samples drawn.

    Returns:
        ``1 - C(n - c, k) / C(n, k)``.

    Raises:
        ValueError: for ``k`` outside ``1..n`` or ``c`` outside ``0..n``.
    """
    if not 0 <= c <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {c}")
    if not 1 <= k <= n:
        raise ValueError(
            f"pass@{k} needs 1 <= k <= n (the samples per task), got k={k} with n={n}: "
            "with fewer samples than k it has no unbiased estimate"
        )
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(frozen=True)
class RunRecord:
    """One finished run, as the sidecar file keeps it (a line of JSON) and the report
    counts it.

    Attributes:
        task_id, index, sample: which run (task ``task_id`` at ``index`` of the split,
            its sample ``sample``).
        success: the env's judgement; ``None`` for an error.
        reward, steps, error, scores, first_observation, messages: as
            :class:`~openenv_mcp.evals.TaskOutcome` has them.
        seconds: how long the run took.
    """

    task_id: str
    index: int
    sample: int
    success: bool | None
    reward: float = 0.0
    steps: int = 0
    error: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    first_observation: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        """``(index, sample)``: what identifies the run within an eval."""
        return (self.index, self.sample)

    def to_json(self) -> dict[str, Any]:
        """The run as one JSON object (a line of the sidecar)."""
        return {
            "task_id": self.task_id,
            "index": self.index,
            "sample": self.sample,
            "success": self.success,
            "reward": self.reward,
            "steps": self.steps,
            "error": self.error,
            "scores": self.scores,
            "first_observation": self.first_observation,
            "messages": self.messages,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: Any) -> RunRecord:
        """Read one run back.

        Raises:
            ArgumentError: naming the field that is missing or of the wrong type.
        """
        if not isinstance(data, dict):
            raise ArgumentError(f"a run is a JSON object, got {type(data).__name__}")
        try:
            success = data["success"]
            if success is not None and not isinstance(success, bool):
                raise TypeError(f"success must be true, false or null, got {success!r}")
            error = data.get("error")
            scores = data.get("scores")
            scores = {} if scores is None else scores
            messages = data.get("messages")
            messages = [] if messages is None else messages
            if not isinstance(scores, dict) or not isinstance(messages, list):
                raise TypeError("scores must be an object and messages a list")
            return cls(
                task_id=str(data["task_id"]),
                index=_int(data["index"]),
                sample=_int(data["sample"]),
                success=success,
                reward=float(data.get("reward", 0.0)),
                steps=_int(data.get("steps", 0)),
                error=None if error is None else str(error),
                scores={str(k): float(v) for k, v in scores.items()},
                first_observation=data.get("first_observation"),
                messages=messages,
                seconds=float(data.get("seconds", 0.0)),
            )
        except KeyError as exc:
            raise ArgumentError(f"a run needs the field {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ArgumentError(f"a run's fields are of the wrong type: {exc}") from None


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return int(value)


@dataclass
class EvalReport:
    """An eval's runs and what they add up to.

    Attributes:
        config: RFC 013's ``config`` (``harness_name``, ``harness_version``,
            ``library_versions``, ``dataset``, ``eval_parameters``).
        tasks: the tasks evaluated (their JSON, in split order).
        runs: every finished run (``samples`` per task once the eval is complete).
        k: the pass@k values asked for.
        reproducible: whether the first task, started twice, gave the same first
            observation (``None``: not probed).
        seconds: how long this process spent playing (resumed runs not included).
    """

    config: dict[str, Any]
    tasks: list[dict[str, Any]]
    runs: list[RunRecord]
    k: tuple[int, ...] = (1,)
    reproducible: bool | None = None
    seconds: float = 0.0

    # -- the figures ----------------------------------------------------------------------

    def _by_task(self) -> dict[str, list[RunRecord]]:
        grouped: dict[str, list[RunRecord]] = {str(t["id"]): [] for t in self.tasks}
        for run in self.runs:
            grouped.setdefault(run.task_id, []).append(run)
        return grouped

    def per_task(self) -> dict[str, dict[str, Any]]:
        """Each task's ``n`` (runs), ``successes``, ``errors`` and ``mean_reward`` (over
        its runs that ended; ``None`` if none did), and the mean of each score the env
        gives beside the return (``mean_human_normalized``)."""
        out: dict[str, dict[str, Any]] = {}
        for task_id, runs in self._by_task().items():
            ended = [r for r in runs if r.error is None]
            out[task_id] = {
                "n": len(runs),
                "successes": sum(1 for r in runs if r.success),
                "errors": len(runs) - len(ended),
                "mean_reward": _mean([r.reward for r in ended]),
                **_env_scores(ended),
            }
        return out

    def scores(self) -> dict[str, Any]:
        """RFC 013's ``scores``: ``pass@K`` for each K, ``success_rate``,
        ``success_rate_se``, ``mean_reward``, ``mean_steps``, ``error_rate``,
        ``reproducible``, ``per_task`` and ``by_difficulty``."""
        per_task = self.per_task()
        scores: dict[str, Any] = {}
        for k in self.k:
            values = [
                pass_at_k(t["n"], t["successes"], k) for t in per_task.values() if t["n"] >= k
            ]
            scores[f"pass@{k}"] = _mean(values)
        scores.update(_rates(self.runs))
        scores["reproducible"] = self.reproducible
        scores["per_task"] = per_task
        scores["by_difficulty"] = self.by_difficulty()
        return scores

    def by_difficulty(self) -> dict[str, dict[str, Any]]:
        """The figures of each difficulty's runs (tasks without one under ``"none"``)."""
        difficulty = {str(t["id"]): str(t.get("difficulty") or "none") for t in self.tasks}
        grouped: dict[str, list[RunRecord]] = {}
        for run in self.runs:
            grouped.setdefault(difficulty.get(run.task_id, "none"), []).append(run)
        out: dict[str, dict[str, Any]] = {}
        for name, runs in sorted(grouped.items()):
            tasks = {r.task_id for r in runs}
            out[name] = {"tasks": len(tasks), "runs": len(runs), **_rates(runs)}
        return out

    def to_json(self) -> dict[str, Any]:
        """The report in RFC 013's shape: ``{"config": ..., "scores": ...}``."""
        return {"config": self.config, "scores": self.scores()}

    def write(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path`` (indented, a newline at the end)."""
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def table(self) -> str:
        """The headline scores as a short two-column table."""
        scores = self.scores()
        rows = [(f"pass@{k}", _fmt(scores[f"pass@{k}"])) for k in self.k]
        rows += [
            (
                "success rate",
                f"{_fmt(scores['success_rate'])} ± {_fmt(scores['success_rate_se'])}",
            ),
            ("mean reward", _fmt(scores["mean_reward"])),
            ("mean steps", _fmt(scores["mean_steps"])),
            *((name.replace("_", " "), _fmt(scores[name])) for name in _env_scores(self.runs)),
            ("error rate", _fmt(scores["error_rate"])),
            ("reproducible", str(scores["reproducible"]).lower()),
            ("tasks x samples", f"{len(self.tasks)} x {self._samples()} = {len(self.runs)} runs"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

    def _samples(self) -> int:
        return int(self.config.get("eval_parameters", {}).get("samples", 0))


def _rates(runs: Sequence[RunRecord]) -> dict[str, Any]:
    ended = [r for r in runs if r.error is None]
    p = _mean([1.0 if r.success else 0.0 for r in ended])
    return {
        "success_rate": p,
        "success_rate_se": None if p is None else math.sqrt(p * (1.0 - p) / len(ended)),
        "mean_reward": _mean([r.reward for r in ended]),
        "mean_steps": _mean([float(r.steps) for r in ended]),
        "error_rate": _mean([0.0 if r.error is None else 1.0 for r in runs]),
        **_env_scores(ended),
    }


def _env_scores(runs: Sequence[RunRecord]) -> dict[str, float | None]:
    """``mean_NAME`` of each score the env gave beside the return (an Atari game's
    ``human_normalized``), over the ended runs that have it."""
    names = sorted({name for r in runs if r.error is None for name in r.scores})
    return {
        f"mean_{name}": _mean(
            [r.scores[name] for r in runs if r.error is None and name in r.scores]
        )
        for name in names
    }


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# -- comparing two reports -------------------------------------------------------------------


def _load(report: Mapping[str, Any] | str | Path, which: str) -> Mapping[str, Any]:
    if isinstance(report, Mapping):
        data: Any = report
    else:
        path = Path(report)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ArgumentError(f"the {which} report {path} does not exist") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ArgumentError(f"the {which} report {path} is not readable JSON: {exc}") from None
    if (
        not isinstance(data, Mapping)
        or not isinstance(data.get("scores"), Mapping)
        or not isinstance(data["scores"].get("per_task"), Mapping)
    ):
        raise ArgumentError(
            f"the {which} report is not an eval report: expected "
            '{"config": ..., "scores": {..., "per_task": ...}}'
        )
    return data


def _rate(task: Any) -> float:
    if not isinstance(task, Mapping) or not task.get("n"):
        return 0.0
    return float(task.get("successes", 0)) / float(task["n"])


def compare(old: Mapping[str, Any] | str | Path, new: Mapping[str, Any] | str | Path) -> str:
    """What changed between two eval reports (their JSON, or paths to them).

    Returns:
        Text: the tasks fixed (no success before, some now) and regressed (the other
        way round), the tasks only one report has, and each headline score's change.

    Raises:
        ArgumentError: a report that is missing or not an eval report.
    """
    before, after = _load(old, "old"), _load(new, "new")
    old_tasks, new_tasks = before["scores"]["per_task"], after["scores"]["per_task"]
    common = [t for t in new_tasks if t in old_tasks]
    fixed = [t for t in common if _rate(old_tasks[t]) == 0 < _rate(new_tasks[t])]
    regressed = [t for t in common if _rate(new_tasks[t]) == 0 < _rate(old_tasks[t])]
    lines = [
        f"tasks compared: {len(common)}",
        f"fixed ({len(fixed)}): {', '.join(fixed) or 'none'}",
        f"regressed ({len(regressed)}): {', '.join(regressed) or 'none'}",
    ]
    only_old = [t for t in old_tasks if t not in new_tasks]
    only_new = [t for t in new_tasks if t not in old_tasks]
    if only_old:
        lines.append(f"only in the old report ({len(only_old)}): {', '.join(only_old)}")
    if only_new:
        lines.append(f"only in the new report ({len(only_new)}): {', '.join(only_new)}")
    lines.append("scores (old -> new, change):")
    names = [
        name
        for name in (*before["scores"], *after["scores"])
        if name not in ("per_task", "by_difficulty")
    ]
    for name in dict.fromkeys(names):
        a, b = before["scores"].get(name), after["scores"].get(name)
        lines.append(f"  {name}: {_show(a)} -> {_show(b)}{_change(a, b)}")
    return "\n".join(lines)


def _show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "n/a" if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:.3f}"
    return str(value)


def _change(a: Any, b: Any) -> str:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return f" ({b - a:+.3f})" if numbers else ""
