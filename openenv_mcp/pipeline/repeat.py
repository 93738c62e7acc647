"""Hold an action for several steps in one call (``repeat``), stopping where a model
should look: the episode's end, a life lost, an action no longer legal."""

from __future__ import annotations

from typing import Any

from openenv_mcp.errors import ArgumentError, InvalidAction
from openenv_mcp.pipeline.base import Layer, Moment
from openenv_mcp.pipeline.narrator import lost_a_life

__all__ = ["MAX_REPEAT", "step_repeated"]

#: Most steps one call may take: at Atari's frameskip 4, about two seconds of play.
MAX_REPEAT = 32


def step_repeated(layer: Layer, action: Any, repeat: int) -> Moment:
    """``layer.step(action)`` up to ``repeat`` times, as one moment: the last observation,
    the summed reward and breakdown, and every event on the way (each saying when,
    where several steps were taken).

    Raises:
        ArgumentError: ``repeat`` outside ``1..MAX_REPEAT``.
        InvalidAction: the first step's action is not legal (a later one stops the
            repeat instead, saying so).
    """
    if not 1 <= repeat <= MAX_REPEAT:
        raise ArgumentError(f"repeat must be 1..{MAX_REPEAT}, got {repeat}")
    if repeat == 1:
        return layer.step(action)
    total: Moment | None = None
    events: list[str] = []
    for _ in range(repeat):
        before = layer.episode.info
        try:
            moment = layer.step(action)
        except InvalidAction as exc:
            if total is None:
                raise
            events.append(f"Stopped after {total.taken} steps: {exc}")
            break
        at = f"step {layer.episode.step}"
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
