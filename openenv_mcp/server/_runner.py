"""One environment instance and its episode, where the environment lives.

An :class:`EnvRunner` is what the server's runtime holds for each live episode,
in the server process or in a worker process alike: the environment, the
episode's counters (status, step, return, last reward, the last observation
and info, the action mask), and one method per operation. Each method does
the whole operation where the environment is: parse and validate the action
(on this episode's own environment, so what is legal is what this episode
allows), step, and make the answer ready for the wire: the structured view,
the PNG frame, and the text line. Only that answer crosses a worker's pipe.

This module imports no MCP machinery: a worker process starts without it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from gymnasium import spaces as gym_spaces

from openenv_mcp.codecs import Frames, array_form, encode_png, to_jsonable
from openenv_mcp.environment import Environment
from openenv_mcp.errors import InvalidAction, OpenEnvError, ResetNeeded, UnknownTool
from openenv_mcp.spaces import encode, is_array_space

__all__ = ["EnvRunner", "Outcome", "SavedEpisode", "Status"]

log = logging.getLogger("openenv_mcp.server")

Status = Literal["new", "running", "ended"]
#: Longest observation text quoted in a result's text line.
_TEXT_LIMIT = 300
#: Most numeric info fields quoted in a result's text line.
_INFO_FIELDS = 5


class Outcome(NamedTuple):
    """An episode operation's answer, ready for the wire.

    Attributes:
        view: the ``structuredContent``: episode id, status, counters, info,
            and the observation where the call's frames send it.
        png: the frame as PNG bytes, where the call asked for one.
        text: the one-line summary a model reads.
    """

    view: dict[str, Any]
    png: bytes | None
    text: str


@dataclass(frozen=True)
class SavedEpisode:
    """A snapshot: the environment's own state and the episode's counters. Picklable."""

    env_state: Any
    observation: Any
    status: Status
    step: int
    episode_return: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    mask: np.ndarray | None


class EnvRunner:
    """An environment and its current episode; every call on one runner is serialized.

    Args:
        env: the environment instance (this runner owns and closes it).
        episode_id: the handle of the episode it serves (named in answers).
    """

    def __init__(self, env: Environment[Any], episode_id: str) -> None:
        self.env = env
        self.episode_id = episode_id
        space = env.observation_space
        self._space = space
        self._array_obs = is_array_space(space)
        self._has_frame = env.has_frame
        discrete = env.action_space
        self._mask_start = (
            int(discrete.start) if isinstance(discrete, gym_spaces.Discrete) else None
        )
        self.status: Status = "new"
        self.step_count = 0
        self.episode_return = 0.0
        self.reward = 0.0
        self.terminated = False
        self.truncated = False
        self.info: dict[str, Any] = {}
        self.observation: Any = None
        self.mask: np.ndarray | None = None

    # -- operations ------------------------------------------------------------------------

    def reset(self, seed: int | None, options: dict[str, Any] | None, frames: Frames) -> Outcome:
        """Start an episode (seeded, with per-episode options)."""
        observation, info = self.env.reset(seed=seed, options=options)
        self.status = "running"
        self.step_count = 0
        self.episode_return = self.reward = 0.0
        self.terminated = self.truncated = False
        self._observe(observation, info)
        actions = self.env.action_set
        hint = f"legal actions: {actions.describe()}" if actions is not None else ""
        return self._outcome("reset", frames, hint)

    def step(self, action: Any, frames: Frames) -> Outcome:
        """Parse ``action`` on this episode's environment, step it, and answer."""
        self._require_running("step")
        parsed = self.env.parse_action(action)
        self._check_mask(parsed)
        result = self.env.step(parsed)
        self.step_count += 1
        self.reward = float(result.reward)
        self.episode_return += self.reward
        self.terminated = bool(result.terminated)
        self.truncated = bool(result.truncated)
        self.status = "ended" if (self.terminated or self.truncated) else "running"
        self._observe(result.observation, result.info)
        return self._outcome("stepped", frames)

    def state(self, frames: Frames) -> Outcome:
        """The episode as it is, with the environment's state fields in ``info``."""
        if self.status == "new":
            raise ResetNeeded(f"state before reset: call reset first (episode {self.episode_id})")
        self.info.update(to_jsonable(dict(self.env.state())))
        return self._outcome("state of", frames)

    def snapshot(self) -> SavedEpisode:
        """The episode's full state, for :meth:`restore` here or in another runner."""
        if self.status == "new":
            raise ResetNeeded(
                f"snapshot before reset: call reset first (episode {self.episode_id})"
            )
        return SavedEpisode(
            env_state=self.env.snapshot(),
            observation=self.observation,
            status=self.status,
            step=self.step_count,
            episode_return=self.episode_return,
            terminated=self.terminated,
            truncated=self.truncated,
            info=dict(self.info),
            mask=self.mask,
        )

    def restore(self, saved: SavedEpisode, frames: Frames) -> Outcome:
        """Continue from a :class:`SavedEpisode` (taken in this process or another)."""
        self.env.restore(saved.env_state)
        self.status = saved.status
        self.step_count = saved.step
        self.episode_return = saved.episode_return
        self.reward = 0.0
        self.terminated, self.truncated = saved.terminated, saved.truncated
        self.observation, self.info, self.mask = saved.observation, dict(saved.info), saved.mask
        return self._outcome("reset", frames)

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Run the environment's own episode tool ``name``; a JSON-able answer."""
        self._require_running(name)
        tool = next((t for t in self.env.tools() if t.name == name), None)
        if tool is None:
            raise UnknownTool(f"{self.env.name} has no episode tool {name!r}")
        args = tool.params.model_validate(params) if tool.params is not None else None
        answer: dict[str, Any] = to_jsonable(dict(tool.handler(self.env, args)))
        return answer

    def close(self) -> None:
        """Free the environment."""
        self.env.close()

    # -- helpers ---------------------------------------------------------------------------

    def _observe(self, observation: Any, info: dict[str, Any]) -> None:
        self.observation = observation
        mask = info.get("action_mask")
        self.mask = None if mask is None else np.asarray(mask)
        # JSON-able where the env lives: odd values become their repr here, so they
        # cross a worker's pipe as they would reach a client.
        self.info = to_jsonable(dict(info))

    def _require_running(self, what: str) -> None:
        """Enforce order: steps only between ``reset`` and the episode's end."""
        if self.status == "new":
            raise ResetNeeded(f"{what} before reset: call reset first (episode {self.episode_id})")
        if self.status == "ended":
            why = "terminated" if self.terminated else "truncated"
            raise ResetNeeded(
                f"episode {self.episode_id} has ended ({why} at step {self.step_count}, return "
                f"{self.episode_return:g}); call reset to start a new one"
            )

    def _check_mask(self, action: Any) -> None:
        """Refuse an action the last ``info["action_mask"]`` marks illegal."""
        mask, start = self.mask, self._mask_start
        if mask is None or start is None or mask.ndim != 1:
            return
        index = int(action) - start
        if 0 <= index < mask.size and mask[index]:
            return
        legal = [start + int(i) for i in np.flatnonzero(mask)]
        actions = self.env.action_set
        named = actions.describe(legal) if actions is not None else ", ".join(map(str, legal))
        raise InvalidAction(
            f"action {int(action)} is not legal now (info.action_mask); legal now: {named}"
        )

    def _outcome(self, headline: str, frames: Frames, hint: str = "") -> Outcome:
        png = None
        if self._has_frame and frames in ("png", "both"):
            frame = self.env.render()
            png = encode_png(frame) if frame is not None else None
        view: dict[str, Any] = {
            "episode_id": self.episode_id,
            "status": self.status,
            "step": self.step_count,
            "reward": self.reward,
            "episode_return": self.episode_return,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "info": self.info,
        }
        if self._array_obs:
            form = array_form(frames)
            if form is not None:
                view["observation"] = encode(self._space, self.observation, form)
        else:  # not an array: always sent, as JSON (its array leaves as the frames say)
            view["observation"] = encode(
                self._space, self.observation, array_form(frames) or "list"
            )
        return Outcome(view, png, self._text(headline, hint))

    def _text(self, headline: str, hint: str) -> str:
        parts = [
            f"{headline} episode {self.episode_id}: step {self.step_count}, reward "
            f"{self.reward:g}, return {self.episode_return:g}"
        ]
        quoted = 0
        for key, value in self.info.items():
            if isinstance(value, (bool, int, float)) and quoted < _INFO_FIELDS:
                parts.append(f"{key} {value}")
                quoted += 1
        if self.status == "ended":
            why = "terminated" if self.terminated else "truncated"
            parts.append(f"episode ended ({why}); call reset to play again")
        words = self._words()
        if words is not None:
            cut = words if len(words) <= _TEXT_LIMIT else words[: _TEXT_LIMIT - 3] + "..."
            parts.append(f"observation: {cut}")
        text = "; ".join(parts)
        return f"{text}\n{hint}" if hint else text

    def _words(self) -> str | None:
        try:
            words = self.env.observation_text(self.observation)
        except OpenEnvError:
            raise
        except Exception:  # a describer must never break a step
            log.exception("%s.observation_text failed", type(self.env).__name__)
            words = None
        if words is None and not self._array_obs:
            words = repr(self.observation)
        return words
