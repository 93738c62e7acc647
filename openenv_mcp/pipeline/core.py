"""The innermost layer: the environment and the episode's counters."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from openenv_mcp.codecs import encode_png, to_jsonable
from openenv_mcp.environment import Environment, has_frame, parse_options
from openenv_mcp.errors import ArgumentError, UnknownTool
from openenv_mcp.narration import narration_of
from openenv_mcp.pipeline.base import EpisodeState, Layer, Moment, SavedEpisode
from openenv_mcp.wire.rng import set_rng_from_wire

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import (
        CallTool,
        Close,
        Frame,
        LegalActions,
        Look,
        Reset,
        Restore,
        Snapshot,
        Step,
        Summary,
    )

__all__ = ["EnvCore", "legal_actions"]


class EnvCore(Layer):
    """Calls the environment and keeps the counters every other layer reads.

    Args:
        env: the environment instance (the pipeline owns and closes it).
        episode_id: the episode's handle.
    """

    def __init__(self, env: Environment[Any], episode_id: str) -> None:
        self.episode = EpisodeState(episode_id=episode_id, env=env, narration=narration_of(env))

    def reset(self, op: Reset) -> Moment:
        """Start an episode: seeded, with per-episode options; without a seed, from the
        generator state ``op.np_random`` (an earlier reset's, drawn on by a client's copy)."""
        state = self.episode
        env = state.env
        if op.np_random is not None and op.seed is None:
            if env.np_random is None:
                raise ArgumentError(f"np_random: {env.name} has no random generator to set")
            set_rng_from_wire(env.np_random, op.np_random)
        observation, info = env.reset(seed=op.seed, options=parse_options(env, op.options))
        state.status = "running"
        state.step = 0
        state.env_return = state.reward = 0.0
        state.terminated = state.truncated = False
        self._observe(observation, info)
        return Moment(state.observation, state.info)

    def step(self, op: Step, action: Any) -> Moment:
        """One environment step with an action already parsed (:class:`~.mask.ActionMask`)."""
        state = self.episode
        result = state.env.step(action)
        reward = float(result.reward)
        state.step += 1
        state.env_return += reward
        state.terminated = bool(result.terminated)
        state.truncated = bool(result.truncated)
        state.status = "ended" if (state.terminated or state.truncated) else "running"
        self._observe(result.observation, result.info)
        return Moment(
            state.observation,
            state.info,
            reward=reward,
            env_reward=reward,
            terminated=state.terminated,
            truncated=state.truncated,
            action=action,
        )

    def look(self, op: Look) -> Moment:
        state = self.episode
        fresh = state.env.observe() if state.status != "new" else None
        if fresh is not None:  # a seat: the others moved since its last step
            self._observe(*fresh)
        state.info.update(to_jsonable(dict(state.env.state())))
        return self._moment()

    def snapshot(self, op: Snapshot) -> SavedEpisode:
        state = self.episode
        return SavedEpisode(
            env_state=state.env.snapshot(),
            observation=state.observation,
            status=state.status,
            step=state.step,
            episode_return=state.episode_return,
            terminated=state.terminated,
            truncated=state.truncated,
            info=dict(state.info),
            mask=state.mask,
            env_return=state.env_return,
        )

    def restore(self, op: Restore) -> Moment:
        state, saved = self.episode, op.saved
        state.env.restore(saved.env_state)
        state.status = saved.status
        state.step = saved.step
        state.terminated, state.truncated = saved.terminated, saved.truncated
        state.observation, state.info, state.mask = saved.observation, dict(saved.info), saved.mask
        state.env_return = saved.env_return
        state.reward = 0.0
        return self._moment()

    def call_tool(self, op: CallTool) -> dict[str, Any]:
        env = self.episode.env
        tool = next((t for t in env.tools() if t.name == op.name), None)
        if tool is None:
            raise UnknownTool(f"{env.name} has no episode tool {op.name!r}")
        args = tool.params.model_validate(op.params) if tool.params is not None else None
        answer: dict[str, Any] = to_jsonable(dict(tool.handler(env, args)))
        return answer

    def legal_actions(self, op: LegalActions) -> dict[str, Any]:
        """Every action of the space (:class:`~.mask.ActionMask` narrows it to the mask's)."""
        state = self.episode
        return legal_actions(state.env, None, state.narration.action_name)

    def summary(self, op: Summary) -> dict[str, Any]:
        state = self.episode
        summary: dict[str, Any] = {
            "episode_id": state.episode_id,
            "status": state.status,
            "steps": state.step,
            "episode_return": state.episode_return,
            "env_return": state.env_return,
            "terminated": state.terminated,
            "truncated": state.truncated,
        }
        if state.scored is not None:
            summary["trajectory"] = state.scored
        if state.recording is not None:
            summary["recording"] = state.recording
        return summary

    def frame(self, op: Frame) -> bytes | None:
        """The current frame as PNG at the environment's size (nothing recorded, nothing
        counted); ``None`` where there is no frame yet."""
        env = self.episode.env
        if not has_frame(env) or self.episode.status == "new":
            return None
        frame = env.render()
        return None if frame is None else encode_png(frame)

    def close(self, op: Close) -> None:
        self.episode.env.close()

    def _observe(self, observation: Any, info: dict[str, Any]) -> None:
        state = self.episode
        state.observation = observation
        mask = info.get("action_mask")
        state.mask = None if mask is None else np.asarray(mask)
        # JSON-able where the env lives: odd values become their repr here, so they
        # cross a worker's pipe as they would reach a client.
        state.info = to_jsonable(dict(info))

    def _moment(self) -> Moment:
        state = self.episode
        return Moment(
            state.observation,
            state.info,
            terminated=state.terminated,
            truncated=state.truncated,
        )


def legal_actions(
    env: Environment[Any],
    legal: list[int] | None,
    name_of: Callable[[int], str | None] | None = None,
) -> dict[str, Any]:
    """The ``legal_actions`` answer: each action legal now (every one where ``legal`` is
    ``None``) with its name and meaning where known."""
    actions = env.action_set
    space = env.action_space
    start = int(getattr(space, "start", 0))
    ids = legal if legal is not None else list(range(start, start + int(getattr(space, "n", 0))))
    listed = []
    for action in ids:
        entry: dict[str, Any] = {"id": action}
        named = actions.by_id(action) if actions is not None else None
        name = named.name if named is not None else (name_of(action) if name_of else None)
        if name is not None:
            entry["name"] = name
        if named is not None and named.meaning:
            entry["meaning"] = named.meaning
        listed.append(entry)
    return {"actions": listed}
