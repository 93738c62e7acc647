"""Hold an action for several steps in one call (``repeat``), stopping where a model
should look: the episode's end, a life lost, an action no longer legal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from openenv_mcp.errors import ArgumentError, InvalidAction
from openenv_mcp.pipeline.base import Layer, Moment
from openenv_mcp.pipeline.narrator import lost_a_life

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import Step

__all__ = ["MAX_REPEAT", "MAX_TASK_REPEAT", "Repeat", "between_steps"]

#: Most steps one call may take: at Atari's frameskip 4, about two seconds of play.
MAX_REPEAT = 32
#: Most steps one call run as an MCP task may take (it reports progress and may be
#: cancelled between any two of them).
MAX_TASK_REPEAT = 100_000

#: Called between the steps of a held action with (steps taken, steps asked); set while a
#: call runs as an MCP task (:mod:`openenv_mcp.server.jobs`). ``True`` stops the hold there
#: (the task was cancelled): the call answers the steps taken, the episode stands.
between_steps: ContextVar[Callable[[int, int], bool] | None] = ContextVar(
    "openenv_mcp_between_steps", default=None
)


class Repeat(Layer):
    """Takes ``op.repeat`` steps as one moment: the last observation, the summed reward
    and breakdown, and every event on the way (each saying when, where several steps
    were taken). It writes the call's reward on the episode (``episode.reward``).

    Raises:
        ArgumentError: ``op.repeat`` outside ``1..MAX_REPEAT`` (``1..MAX_TASK_REPEAT`` in
            a call run as an MCP task).
        InvalidAction: the first step's action is not legal (a later one stops the
            repeat instead, saying so).
    """

    def step(self, op: Step, action: Any) -> Moment:
        repeat = op.repeat
        if repeat == 1:
            moment = self.inner.step(op, action)
        elif not 1 <= repeat <= (MAX_REPEAT if between_steps.get() is None else MAX_TASK_REPEAT):
            raise ArgumentError(
                f"repeat must be 1..{MAX_REPEAT}, got {repeat} (up to {MAX_TASK_REPEAT} in a "
                "call run as an MCP task: a client declaring io.modelcontextprotocol/tasks)"
            )
        else:
            moment = self._held(op, action)
        self.episode.reward = moment.reward
        return moment

    def _held(self, op: Step, action: Any) -> Moment:
        # The steps after the first are the same call's: their records name no call.
        held = dataclasses.replace(op, held=True)
        state = self.episode
        total: Moment | None = None
        events: list[str] = []
        between = between_steps.get()
        for _ in range(op.repeat):
            if between is not None and total is not None and between(total.taken, op.repeat):
                events.append(f"Stopped after {total.taken} steps: the call was cancelled")
                break
            before = state.info
            try:
                moment = self.inner.step(op if total is None else held, action)
            except InvalidAction as exc:
                if total is None:
                    raise
                events.append(f"Stopped after {total.taken} steps: {exc}")
                break
            at = f"step {state.step}"
            events += [e if at in e else f"{e} ({at})" for e in moment.events]
            total = moment if total is None else _add(total, moment)
            if moment.ended or lost_a_life(before, moment.info):
                break  # a model should look before it goes on
        assert total is not None
        total.events = events
        return total


def _add(total: Moment, moment: Moment) -> Moment:
    """``moment`` carrying the sums of both: reward, env reward, breakdown, steps."""
    if total.breakdown is not None and moment.breakdown is not None:
        breakdown = dict(total.breakdown)
        for name, part in moment.breakdown.items():
            breakdown[name] = breakdown.get(name, 0.0) + part
        moment.breakdown = breakdown
    moment.reward += total.reward
    moment.env_reward += total.env_reward
    moment.recording_error = total.recording_error or moment.recording_error
    moment.taken = total.taken + 1
    return moment
