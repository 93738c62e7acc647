"""The innermost layer: the environment and the episode's counters."""

from __future__ import annotations

from typing import Any

import numpy as np

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.environment import Environment, parse_options
from openenv_mcp.errors import UnknownTool
from openenv_mcp.narration import narration_of
from openenv_mcp.pipeline.base import EpisodeState, Layer, Moment, SavedEpisode

__all__ = ["EnvCore"]


class EnvCore(Layer):
    """Calls the environment and keeps the counters every other layer reads.

    Args:
        env: the environment instance (the pipeline owns and closes it).
        episode_id: the episode's handle.
    """

    def __init__(self, env: Environment[Any], episode_id: str) -> None:
        self.episode = EpisodeState(episode_id=episode_id, env=env, narration=narration_of(env))

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> Moment:
        state = self.episode
        observation, info = state.env.reset(seed=seed, options=parse_options(state.env, options))
        state.status = "running"
        state.step = 0
        state.env_return = 0.0
        state.terminated = state.truncated = False
        self._observe(observation, info)
        return Moment(state.observation, state.info)

    def step(self, action: Any) -> Moment:
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

    def look(self) -> Moment:
        state = self.episode
        state.info.update(to_jsonable(dict(state.env.state())))
        return self._moment()

    def snapshot(self) -> SavedEpisode:
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

    def restore(self, saved: SavedEpisode) -> Moment:
        state = self.episode
        state.env.restore(saved.env_state)
        state.status = saved.status
        state.step = saved.step
        state.terminated, state.truncated = saved.terminated, saved.truncated
        state.observation, state.info, state.mask = saved.observation, dict(saved.info), saved.mask
        state.env_return = saved.env_return
        return self._moment()

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        env = self.episode.env
        tool = next((t for t in env.tools() if t.name == name), None)
        if tool is None:
            raise UnknownTool(f"{env.name} has no episode tool {name!r}")
        args = tool.params.model_validate(params) if tool.params is not None else None
        answer: dict[str, Any] = to_jsonable(dict(tool.handler(env, args)))
        return answer

    def close(self) -> None:
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
