"""The pipeline's outermost layer: it writes the answer an operation sends, the
structured view, the text a model reads and the frame, as one :class:`Reply` in wire
form.

Made where the environment lives, so only this crosses a worker's pipe: a few
hundred bytes for a zstd Atari frame, rather than the frame's 100 KB.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from openenv_mcp.codecs import (
    Frames,
    array_form,
    encode_png,
    encode_raw,
    wants_png,
)
from openenv_mcp.environment import has_frame
from openenv_mcp.errors import InvalidAction, OpenEnvError
from openenv_mcp.pipeline.answers import Outcome, Reply, image_block, text_block
from openenv_mcp.pipeline.base import Layer, Moment, Passing
from openenv_mcp.spaces import encode, is_array_space
from openenv_mcp.wire.rng import rng_to_wire

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import (
        Look,
        Reset,
        Restore,
        Step,
    )

__all__ = ["MIN_FRAME_EDGE", "Outcome", "Reply", "View", "image_block", "text_block"]

log = logging.getLogger("openenv_mcp.server")

#: Frames scaled automatically (``frame_scale=None``) get at least this short edge, in
#: pixels: vision models read images under 200 px poorly.
MIN_FRAME_EDGE = 400
#: Longest observation text quoted in an answer.
TEXT_LIMIT = 300
_ACTION_LABEL = 40


class View(Passing):
    """Writes the answers of one episode: the outermost layer of its pipeline, and the
    one an operation enters by (:meth:`~openenv_mcp.pipeline.ops.Op.apply`).

    Args:
        inner: the layer below (the episode's :class:`~.repeat.Repeat`).
        frame_scale: PNG frames are this many times the environment's (nearest
            neighbour); ``None``: the least scale that makes the short edge at least
            :data:`MIN_FRAME_EDGE` pixels, so a model can read them.
    """

    def __init__(self, inner: Layer, frame_scale: int | None) -> None:
        super().__init__(inner)
        self.frame_scale = frame_scale
        env = self.episode.env
        self._space = env.observation_space
        self._array_obs = is_array_space(self._space)
        self._has_frame = has_frame(env)

    # -- operations that answer with a view ------------------------------------------------

    def reset(self, op: Reset) -> Reply:
        """Start an episode; the answer opens it (what it is, its actions)."""
        if op.extras:
            self.check_extras(op.extras)
        moment = self.inner.reset(op)
        state = self.episode
        seeded = f", seed {op.seed}" if op.seed is not None else ""
        head = f"New episode of {state.narration.title} (episode {state.episode_id}{seeded})"
        text = self.text(head, [], opening=True)
        return self.reply(moment, text, op.frames, opening=True, extras=op.extras)

    def step(self, op: Step) -> Reply:
        """One call's steps; the answer says what they did (``moment`` may sum several)."""
        if op.extras:
            self.check_extras(op.extras)
        moment = self.inner.step(op, op.action)
        state = self.episode
        label = self.action_label(op.action) + (f" x{moment.taken}" if moment.taken > 1 else "")
        head = (
            f"Step {state.step} ({label}): reward {moment.reward:+g}, "
            f"return {state.episode_return:g}"
        )
        text = self.text(head, moment.events)
        return self.reply(moment, text, op.frames, stepped=True, extras=op.extras)

    def look(self, op: Look) -> Reply:
        """The episode as it is (``state``)."""
        if op.extras:
            self.check_extras(op.extras)
        moment = self.inner.look(op)
        state = self.episode
        head = (
            f"Episode {state.episode_id} of {state.narration.title} at step {state.step}: "
            f"return {state.episode_return:g}"
        )
        return self.reply(moment, self.text(head, []), op.frames, extras=op.extras)

    def restore(self, op: Restore) -> Reply:
        """Continue from a snapshot; the answer opens the continued episode."""
        moment = self.inner.restore(op)
        state = self.episode
        head = (
            f"Episode {state.episode_id} of {state.narration.title} continues from a snapshot "
            f"at step {state.step} (return {state.episode_return:g})"
        )
        return self.reply(moment, self.text(head, [], opening=True), op.frames, opening=True)

    # -- the answer ------------------------------------------------------------------------

    def reply(
        self,
        moment: Moment,
        text: str,
        frames: Frames,
        *,
        opening: bool = False,
        stepped: bool = False,
        extras: tuple[str, ...] = (),
    ) -> Reply:
        """The answer to an operation that left the episode at ``moment``.

        Args:
            moment: what the operation did (its reward, events, breakdown...).
            text: the summary a model reads.
            frames: how the observation travels (the call's, or the server's default).
            opening: the answer starts an episode (reset, or from a snapshot): it
                names the actions, and the recording.
            stepped: the answer is a step's: it says how many steps it took.
            extras: the env's arrays to send beside the observation, by name.
        """
        state = self.episode
        view: dict[str, Any] = {
            "episode_id": state.episode_id,
            "status": state.status,
            "step": state.step,
            "reward": state.reward,
            "episode_return": state.episode_return,
            "terminated": state.terminated,
            "truncated": state.truncated,
            "info": state.info,
            "summary": text,
            "events": moment.events,
        }
        if stepped:
            view["repeated"] = moment.taken
        if opening:
            actions = state.env.action_set
            if actions is not None:
                view["legal_actions"] = actions.names
            if state.recording is not None:
                view["recording"] = state.recording
        if moment.breakdown is not None:
            view["rewards"] = moment.breakdown
        if moment.trajectory is not None:
            view["trajectory"] = moment.trajectory
        if moment.recording_error is not None:
            view["recording_failed"] = moment.recording_error
        # The task: when the episode starts and when it ends (judged), and on a look.
        if state.task is not None and (not stepped or state.status == "ended"):
            view["task"] = state.task

        if opening:  # the generator a client mirrors (wrappers draw no-op starts from it)
            rng = rng_to_wire(state.env.np_random)
            if rng is not None:
                view["np_random"] = rng
        if extras:
            compress = frames != "raw"  # zstd unless raw was asked for: screens compress well
            env = state.env
            view["extras"] = {
                name: encode_raw(np.asarray(env.extra(name)), compress=compress) for name in extras
            }
        if self._array_obs:
            form = array_form(frames)
            if form is not None:
                view["observation"] = encode(self._space, state.observation, form)
        else:  # not an array: always sent, as JSON (its array leaves as the frames say)
            view["observation"] = encode(
                self._space, state.observation, array_form(frames) or "list"
            )
        content = [{"type": "text", "text": text}]
        png = self.png(frames) if self._has_frame and wants_png(frames) else None
        if png is not None:
            content.append(image_block(png))
        return Reply(content, view)

    def check_extras(self, extras: tuple[str, ...]) -> None:
        """Refuse extras the env does not serve, before anything happens."""
        env = self.episode.env
        for name in extras:
            if name not in env.extra_names:
                env.extra(name)  # raises, naming the env's extras

    def png(self, frames: Frames) -> bytes | None:
        """The current frame as PNG, where the call's frames ask for one."""
        if not self._has_frame or not wants_png(frames):
            return None
        frame = self.episode.env.render()
        if frame is None:
            return None
        scale = self.frame_scale
        if scale is None:
            scale = max(1, -(-MIN_FRAME_EDGE // min(frame.shape[:2])))
        return encode_png(frame, scale=scale)

    # -- the text a model reads ------------------------------------------------------------

    def text(self, head: str, events: list[str], *, opening: bool = False) -> str:
        """What a model reads: what happened, the state, and what to do next."""
        state = self.episode
        lives = state.info.get("lives")
        if isinstance(lives, int) and not isinstance(lives, bool) and lives > 0:
            head += f", {lives} {'life' if lives == 1 else 'lives'} left"
        sentences = [head, *events]
        if state.status == "ended":
            why = "terminated" if state.terminated else "truncated"
            sentences.append(
                f"Episode over ({why}) after {state.step} steps with return "
                f"{state.episode_return:g}: call reset to play again"
            )
        words = self._words()
        if words is not None:
            cut = words if len(words) <= TEXT_LIMIT else words[: TEXT_LIMIT - 3] + "..."
            sentences.append(f"Observation: {cut}")
        briefing = state.narration.briefing() if opening else ""
        if briefing:
            sentences.append(briefing)
        actions = state.env.action_set
        if opening and actions is not None:
            legal = "; ".join(f"{a.name} = {a.meaning}" if a.meaning else a.name for a in actions)
            sentences.append(f"Legal actions: {legal}")
        return ". ".join([s.rstrip(".") for s in sentences]) + "."

    def action_label(self, action: Any) -> str:
        """An action as a model named it, or by its name where the action set has one."""
        actions = self.episode.env.action_set
        if actions is not None:
            try:
                return actions.by_id(actions.resolve(action)).name
            except (InvalidAction, IndexError):
                pass
        text = action if isinstance(action, str) else repr(action)
        return text if len(text) <= _ACTION_LABEL else text[: _ACTION_LABEL - 3] + "..."

    def _words(self) -> str | None:
        state = self.episode
        try:
            words = state.narration.observation_text(state.observation)
        except OpenEnvError:
            raise
        except Exception:  # a describer must never break a step
            log.exception("%s.observation_text failed", type(state.narration).__name__)
            words = None
        if words is None and not self._array_obs:
            words = repr(state.observation)
        return words
