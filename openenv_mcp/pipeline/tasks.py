"""Tasks (:mod:`openenv_mcp.tasks`): a reset that names a task starts it, and the
episode's end is judged by the env's rule for success.

Two layers of one concern, at the two places it touches: :class:`StartTask`, outside
the recorder, turns the task into the reset it is (so the recording holds the seed and
options the env got, replayable without the task set); :class:`JudgeTask`, inside the
recorder and outside the served rewards, judges the ended episode on its return (so
the recording's end says whether it succeeded).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from openenv_mcp.pipeline.base import Layer, Moment, SavedEpisode
from openenv_mcp.tasks import TASK_OPTIONS, Ending, Started, TaskSet, start_task

if TYPE_CHECKING:
    from openenv_mcp.pipeline import ops

__all__ = ["JudgeTask", "StartTask"]


class StartTask(Layer):
    """Turns ``reset(options={"split", "index"})`` or ``{"task"}`` into the task's seed
    and options; the layers below see the reset the task is, with
    :attr:`~.ops.Reset.task` naming it.

    Args:
        inner: the next layer in.
    """

    def __init__(self, inner: Layer) -> None:
        super().__init__(inner)
        self._task_set: TaskSet | None = None
        self._asked = False

    def task_set(self) -> TaskSet | None:
        """The env's task set, asked for once (and only when a reset names a task)."""
        if not self._asked:
            self._task_set = self.episode.env.task_set()
            self._asked = True
        return self._task_set

    def reset(self, op: ops.Reset) -> Moment:
        options = op.options
        if not options or not any(key in options for key in TASK_OPTIONS):
            return self.inner.reset(op)
        started = start_task(self.task_set(), self.episode.env.name, op.seed, options)
        assert started is not None  # the options name a task
        return self.inner.reset(
            dataclasses.replace(op, seed=started.seed, options=started.options, task=started)
        )


class JudgeTask(Layer):
    """Keeps the task the episode started (:attr:`~.base.EpisodeState.task`, which the
    view sends) and, when the episode ends, judges it by the env's rule.

    Args:
        inner: the next layer in (:class:`~.rewards.ServedRewards`, whose return it
            judges).
    """

    def __init__(self, inner: Layer) -> None:
        super().__init__(inner)
        self.started: Started | None = None

    def reset(self, op: ops.Reset) -> Moment:
        moment = self.inner.reset(op)
        self.started = op.task
        self.episode.task = None if op.task is None else op.task.to_json()
        return moment

    def step(self, op: ops.Step, action: Any) -> Moment:
        moment = self.inner.step(op, action)
        started = self.started
        if started is not None and moment.ended:
            state = self.episode
            task_set = state.env.task_set()
            assert task_set is not None  # the task was started from it
            ending = Ending(
                state.episode_return,
                state.env_return,
                state.step,
                moment.terminated,
                moment.truncated,
                moment.info,
            )
            judged: dict[str, Any] = {
                **started.to_json(),
                "success": bool(task_set.success(started.task, ending)),
            }
            scores = task_set.scores(started.task, ending)
            if scores:
                judged["scores"] = {name: float(value) for name, value in scores.items()}
            state.task = judged
        return moment

    def summary(self, op: ops.Summary) -> dict[str, Any]:
        summary = self.inner.summary(op)
        if self.episode.task is not None:
            summary["task"] = self.episode.task
        return summary

    def snapshot(self, op: ops.Snapshot) -> SavedEpisode:
        saved = self.inner.snapshot(op)
        return dataclasses.replace(saved, task=(self.started, self.episode.task))

    def restore(self, op: ops.Restore) -> Moment:
        moment = self.inner.restore(op)
        self.started, self.episode.task = op.saved.task or (None, None)
        return moment
