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

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
from gymnasium import spaces as gym_spaces

from openenv_mcp.codecs import Frames, array_form, encode_png, to_jsonable
from openenv_mcp.environment import Environment
from openenv_mcp.errors import (
    ArgumentError,
    EnvCrashed,
    InvalidAction,
    OpenEnvError,
    ResetNeeded,
    UnknownTool,
)
from openenv_mcp.recording import EpisodeRecorder
from openenv_mcp.rewards import RewardSet, Step, load_rewards
from openenv_mcp.spaces import encode, is_array_space

__all__ = [
    "MAX_REPEAT",
    "MIN_FRAME_EDGE",
    "EnvRunner",
    "Outcome",
    "RunnerOptions",
    "SavedEpisode",
    "Status",
]

log = logging.getLogger("openenv_mcp.server")

Status = Literal["new", "running", "ended"]
#: Longest observation text quoted in a result's summary.
_TEXT_LIMIT = 300
#: Most steps one call may take (``repeat``): at Atari's frameskip 4, about two seconds of play.
MAX_REPEAT = 32
#: Frames scaled automatically (``frame_scale=None``) get at least this short edge, in
#: pixels: vision models read images under 200 px poorly.
MIN_FRAME_EDGE = 400
_ACTION_LABEL = 40


class Outcome(NamedTuple):
    """An episode operation's answer, ready for the wire.

    Attributes:
        view: the ``structuredContent``: episode id, status, counters, info,
            the summary and events, and the observation where the call's
            frames send it.
        png: the frame as PNG bytes, where the call asked for one.
        text: the summary a model reads (the same as ``view["summary"]``).
    """

    view: dict[str, Any]
    png: bytes | None
    text: str


@dataclass(frozen=True)
class RunnerOptions:
    """What a runner does beside stepping; picklable, so a worker process gets the same.

    Attributes:
        frame_scale: PNG frames are this many times the environment's (nearest
            neighbour); ``None``: the least scale that makes the short edge at
            least :data:`MIN_FRAME_EDGE` pixels, so a model can read them.
        rewards: ``package.module:obj`` references of rewards to compose
            (:mod:`openenv_mcp.rewards`), loaded where the env lives.
        record: a directory to record every episode into (:mod:`openenv_mcp.recording`).
        record_video: also write an MP4 of each recorded episode with frames.
        describe: what a recording's start record says of the environment
            (its name, class and config).
    """

    frame_scale: int | None = 1
    rewards: tuple[str, ...] = ()
    record: str | None = None
    record_video: bool = False
    describe: dict[str, Any] = field(default_factory=dict)


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
    trajectory: tuple[Any, ...] = ()
    env_return: float = 0.0


def _lost_a_life(before: dict[str, Any], after: dict[str, Any]) -> bool:
    lives_before, lives = before.get("lives"), after.get("lives")
    return isinstance(lives, int) and isinstance(lives_before, int) and lives < lives_before


class EnvRunner:
    """An environment and its current episode; every call on one runner is serialized.

    Args:
        env: the environment instance (this runner owns and closes it).
        episode_id: the handle of the episode it serves (named in answers).
        options: frames, rewards and recording (:class:`RunnerOptions`).
    """

    def __init__(
        self, env: Environment[Any], episode_id: str, options: RunnerOptions | None = None
    ) -> None:
        options = options or RunnerOptions()
        self.env = env
        self.episode_id = episode_id
        self.frame_scale = options.frame_scale
        self.rewards: RewardSet | None = None
        served = [*env.rewards(), *load_rewards(options.rewards)]
        if served:
            self.rewards = RewardSet(served)
        self.recorder: EpisodeRecorder | None = None
        if options.record is not None:
            self.recorder = EpisodeRecorder(
                options.record, episode_id, env, options.describe, video=options.record_video
            )
        #: The episode's steps, for trajectory rewards (observations only if one reads them).
        self.trajectory: list[Step] = []
        #: The trajectory rewards' scores and credit, once the episode has ended.
        self.scored: dict[str, Any] | None = None
        self.env_return = 0.0
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
        self.episode_return = self.reward = self.env_return = 0.0
        self.terminated = self.truncated = False
        self.trajectory, self.scored = [], None
        self._observe(observation, info)
        recorded = None
        if self.recorder is not None:
            recorded = self.recorder.start(seed, options, observation, self.info)
        seeded = f", seed {seed}" if seed is not None else ""
        head = f"New episode of {self.env.title} (episode {self.episode_id}{seeded})"
        return self._recorded(self._outcome(frames, head, [], reset=True), recorded)

    def step(self, action: Any, frames: Frames, repeat: int = 1) -> Outcome:
        """Parse ``action`` on this episode's environment, step it (``repeat`` times,
        stopping where the episode ends), and answer with the last frame, the summed
        reward and every event on the way."""
        self._require_running("step")
        if not 1 <= repeat <= MAX_REPEAT:
            raise ArgumentError(f"repeat must be 1..{MAX_REPEAT}, got {repeat}")
        try:
            return self._step(action, frames, repeat)
        except Exception as exc:
            # What breaks the episode ends its recording, saying why; an env's own
            # validation error (an illegal first action) changes nothing.
            breaks = not isinstance(exc, OpenEnvError) or isinstance(exc, EnvCrashed)
            if breaks and self.recorder is not None:
                self.recorder.end("broken", steps=self.step_count, error=str(exc))
            raise

    def _step(self, action: Any, frames: Frames, repeat: int) -> Outcome:
        events: list[str] = []
        total = 0.0
        taken = 0
        breakdown: dict[str, float] | None = {} if self.rewards is not None else None
        call: dict[str, Any] | None = {"tool": "step", "arguments": {"action": action}}
        if repeat != 1 and call is not None:
            call["arguments"]["repeat"] = repeat
        for _ in range(repeat):
            try:
                parsed = self.env.parse_action(action)
                self._check_mask(parsed)
            except InvalidAction as exc:
                if not taken:
                    raise
                events.append(f"Stopped after {taken} steps: {exc}")
                break
            before = self.info
            result = self.env.step(parsed)
            taken += 1
            self.step_count += 1
            env_reward = float(result.reward)
            self.env_return += env_reward
            self.terminated = bool(result.terminated)
            self.truncated = bool(result.truncated)
            self.status = "ended" if (self.terminated or self.truncated) else "running"
            self._observe(result.observation, result.info)
            value, parts = self._reward(parsed, env_reward)
            total += value
            if breakdown is not None and parts is not None:
                for name, part in parts.items():
                    breakdown[name] = breakdown.get(name, 0.0) + part
            if self.recorder is not None:
                self.recorder.step(
                    self.step_count,
                    parsed,
                    value,
                    env_reward,
                    parts,
                    self.terminated,
                    self.truncated,
                    self.info,
                    result.observation,
                    call,
                )
                call = None
            found = self._events(before, result)
            if repeat > 1:  # say when, unless the event does
                at = f"step {self.step_count}"
                found = [e if at in e else f"{e} ({at})" for e in found]
            events += found
            if self.status == "ended" or _lost_a_life(before, self.info):
                break  # a model should look before it goes on
        self.reward = total
        self.episode_return += total
        ended = self._end() if self.status == "ended" else None
        label = self._action_label(action) + (f" x{taken}" if taken > 1 else "")
        head = (
            f"Step {self.step_count} ({label}): reward {total:+g}, return {self.episode_return:g}"
        )
        outcome = self._outcome(frames, head, events, repeated=taken)
        if breakdown is not None:
            outcome.view["rewards"] = breakdown
        if ended is not None:
            outcome.view["trajectory"] = ended
        return outcome

    def _reward(self, action: Any, env_reward: float) -> tuple[float, dict[str, float] | None]:
        """One step's reward and its breakdown (the env's own without served rewards)."""
        rewards = self.rewards
        if rewards is None:
            return env_reward, None
        step = Step(
            self.step_count,
            action,
            self.observation,
            env_reward,
            self.terminated,
            self.truncated,
            self.info,
        )
        value, parts = rewards.evaluate(step)
        if rewards.trajectory:
            kept = (
                step if rewards.keep_observations else dataclasses.replace(step, observation=None)
            )
            self.trajectory.append(kept)
        return value, parts

    def _end(self) -> dict[str, Any] | None:
        """At the episode's end: the trajectory rewards, and the recording's end record."""
        scored = None
        if self.rewards is not None and self.rewards.trajectory:
            scored = self.scored = self.rewards.end(self.trajectory)
        if self.recorder is not None:
            self.recorder.end(
                "terminated" if self.terminated else "truncated",
                steps=self.step_count,
                episode_return=self.episode_return,
                env_return=self.env_return,
                trajectory=scored,
            )
        return scored

    def episode_summary(self) -> dict[str, Any]:
        """The episode so far: steps, returns, each reward's total, the trajectory rewards
        (at the end), and where it is recorded."""
        if self.status == "new":
            raise ResetNeeded(
                f"episode_summary before reset: call reset first (episode {self.episode_id})"
            )
        summary: dict[str, Any] = {
            "episode_id": self.episode_id,
            "status": self.status,
            "steps": self.step_count,
            "episode_return": self.episode_return,
            "env_return": self.env_return,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }
        if self.scored is not None:
            summary["trajectory"] = self.scored
        if self.recorder is not None and self.recorder.path is not None:
            summary["recording"] = str(self.recorder.path)
        return summary

    def state(self, frames: Frames) -> Outcome:
        """The episode as it is, with the environment's state fields in ``info``."""
        if self.status == "new":
            raise ResetNeeded(f"state before reset: call reset first (episode {self.episode_id})")
        self.info.update(to_jsonable(dict(self.env.state())))
        if self.recorder is not None:
            self.recorder.call("state", None, self.step_count)
        head = (
            f"Episode {self.episode_id} of {self.env.title} at step {self.step_count}: "
            f"return {self.episode_return:g}"
        )
        return self._outcome(frames, head, [])

    def frame_png(self) -> bytes | None:
        """The current frame as PNG at the environment's size, for a watcher (nothing
        recorded, nothing counted); ``None`` where there is no frame yet."""
        if not self._has_frame or self.status == "new":
            return None
        frame = self.env.render()
        return None if frame is None else encode_png(frame)

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
            trajectory=tuple(self.trajectory),
            env_return=self.env_return,
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
        self.trajectory, self.scored = list(saved.trajectory), None
        self.env_return = saved.env_return
        recorded = None
        if self.recorder is not None:  # not replayable from a seed: the start says so
            recorded = self.recorder.start(
                None, None, self.observation, self.info, from_snapshot=True, step=saved.step
            )
        head = (
            f"Episode {self.episode_id} of {self.env.title} continues from a snapshot at step "
            f"{self.step_count} (return {self.episode_return:g})"
        )
        return self._recorded(self._outcome(frames, head, [], reset=True), recorded)

    @staticmethod
    def _recorded(outcome: Outcome, path: Any) -> Outcome:
        if path is not None:
            outcome.view["recording"] = str(path)
        return outcome

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Run the environment's own episode tool ``name``; a JSON-able answer."""
        self._require_running(name)
        tool = next((t for t in self.env.tools() if t.name == name), None)
        if tool is None:
            raise UnknownTool(f"{self.env.name} has no episode tool {name!r}")
        args = tool.params.model_validate(params) if tool.params is not None else None
        answer: dict[str, Any] = to_jsonable(dict(tool.handler(self.env, args)))
        if self.recorder is not None:
            self.recorder.call(name, params, self.step_count)
        return answer

    def close(self) -> None:
        """End the recording (if the episode is mid-way) and free the environment."""
        try:
            if self.recorder is not None:
                self.recorder.end(
                    "closed", steps=self.step_count, episode_return=self.episode_return
                )
        finally:
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

    def _events(self, info_before: dict[str, Any], result: Any) -> list[str]:
        """A step's events, in words: a life lost, the environment's own, the episode's end."""
        found: list[str] = []
        if _lost_a_life(info_before, self.info):
            lives = int(self.info["lives"])
            lost = int(info_before["lives"]) - lives
            found.append(f"Lost {'a life' if lost == 1 else f'{lost} lives'} ({lives} left)")
        try:
            found += [str(e) for e in self.env.step_events(info_before, result)]
        except Exception:  # events are words for a model: they must never break a step
            log.exception("%s.step_events failed", type(self.env).__name__)
        if self.terminated:
            found.append(f"The episode is over (terminated, step {self.step_count})")
        elif self.truncated:
            found.append(f"The episode was cut short (truncated at step {self.step_count})")
        return found

    def _action_label(self, action: Any) -> str:
        actions = self.env.action_set
        if actions is not None:
            try:
                return actions.by_id(actions.resolve(action)).name
            except (InvalidAction, IndexError):
                pass
        text = action if isinstance(action, str) else repr(action)
        return text if len(text) <= _ACTION_LABEL else text[: _ACTION_LABEL - 3] + "..."

    def _outcome(
        self,
        frames: Frames,
        head: str,
        events: list[str],
        *,
        reset: bool = False,
        repeated: int | None = None,
    ) -> Outcome:
        png = None
        if self._has_frame and frames in ("png", "both"):
            frame = self.env.render()
            if frame is not None:
                scale = self.frame_scale
                if scale is None:
                    scale = max(1, -(-MIN_FRAME_EDGE // min(frame.shape[:2])))
                png = encode_png(frame, scale=scale)
        summary = self._summary(head, events, reset)
        view: dict[str, Any] = {
            "episode_id": self.episode_id,
            "status": self.status,
            "step": self.step_count,
            "reward": self.reward,
            "episode_return": self.episode_return,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "info": self.info,
            "summary": summary,
            "events": events,
        }
        if repeated is not None:
            view["repeated"] = repeated
        actions = self.env.action_set
        if reset and actions is not None:
            view["legal_actions"] = actions.names
        if self._array_obs:
            form = array_form(frames)
            if form is not None:
                view["observation"] = encode(self._space, self.observation, form)
        else:  # not an array: always sent, as JSON (its array leaves as the frames say)
            view["observation"] = encode(
                self._space, self.observation, array_form(frames) or "list"
            )
        return Outcome(view, png, summary)

    def _summary(self, head: str, events: list[str], reset: bool) -> str:
        """What a model reads: what happened, the state, and what to do next."""
        lives = self.info.get("lives")
        if isinstance(lives, int) and not isinstance(lives, bool) and lives > 0:
            head += f", {lives} {'life' if lives == 1 else 'lives'} left"
        sentences = [head, *events]
        if self.status == "ended":
            why = "terminated" if self.terminated else "truncated"
            sentences.append(
                f"Episode over ({why}) after {self.step_count} steps with return "
                f"{self.episode_return:g}: call reset to play again"
            )
        words = self._words()
        if words is not None:
            cut = words if len(words) <= _TEXT_LIMIT else words[: _TEXT_LIMIT - 3] + "..."
            sentences.append(f"Observation: {cut}")
        actions = self.env.action_set
        if reset and actions is not None:
            legal = "; ".join(f"{a.name} = {a.meaning}" if a.meaning else a.name for a in actions)
            sentences.append(f"Legal actions: {legal}")
        return ". ".join(s.rstrip(".") for s in sentences) + "."

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
