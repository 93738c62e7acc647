"""Gymnasium's ``AtariPreprocessing`` and ``FrameStackObservation``, where the emulator is.

Trainers rarely want the 210x160 RGB screen: the standard pipeline (Machado et al.
2018, as Gymnasium's ``AtariPreprocessing`` implements it) plays each step as
``frame_skip`` emulator frames, keeps the max of the last two screens, makes it
grayscale and resizes it to 84x84; most then stack the last four. Done on the server,
an observation is 7 KB instead of 100 KB, and the wire carries that.

:class:`Preprocessing` is that wrapper's algorithm line for line (its quirks included:
a step that ends mid-skip keeps the screens of the step before), over an
:class:`~openenv_mcp_envs.atari._emulator.AtariEmulator` stepping one frame at a time, so
``serve atari --preprocess --frame-stack 4`` and
``FrameStackObservation(AtariPreprocessing(gym.make("ALE/Pong-v5", frameskip=1)), 4)``
give equal observations, rewards and flags for the same seeds and actions. The
resize is OpenCV's ``INTER_AREA``, as the wrapper's.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from openenv_mcp.errors import DependencyNotInstalled
from openenv_mcp_envs.atari._emulator import AtariConfig, AtariEmulator, AtariSnapshot

__all__ = ["Preprocessing", "PreprocessingSnapshot"]

UInt8Array = npt.NDArray[np.uint8]


def _cv2() -> Any:
    try:
        import cv2
    except ImportError:
        raise DependencyNotInstalled(
            "atari --preprocess resizes with OpenCV, as Gymnasium's AtariPreprocessing does: "
            "pip install 'openenv-mcp[preprocess]' (or opencv-python-headless)"
        ) from None
    return cv2


@dataclass(frozen=True)
class PreprocessingSnapshot:
    """The emulator's snapshot and the wrapper's own state (its screens, stack, counters)."""

    emulator: AtariSnapshot
    buffers: tuple[UInt8Array, UInt8Array]
    stack: tuple[UInt8Array, ...]
    lives: int
    steps: int


class Preprocessing:
    """``AtariPreprocessing`` (then ``FrameStackObservation``) over an emulator.

    Args:
        config: the env's options: ``frameskip`` is the wrapper's ``frame_skip``,
            ``obs_type`` grayscale or rgb its ``grayscale_obs``, and ``noop_max``,
            ``screen_size``, ``terminal_on_life_loss``, ``frame_stack`` its own;
            ``max_episode_steps`` counts preprocessed steps (a ``TimeLimit`` over it).

    Raises:
        DependencyNotInstalled: OpenCV is not installed.
        ValueError: ``noop_max`` > 0 for a game whose first action is not NOOP.
    """

    def __init__(self, config: AtariConfig) -> None:
        self._cv2 = _cv2()
        self.config = config
        # The emulator is ALE/<Game>-v5 with frameskip=1 and its own frame cap.
        self.emu = AtariEmulator(
            config.model_copy(update={"frameskip": 1, "max_episode_steps": None})
        )
        if config.noop_max > 0 and self.emu.actions[0].name != "NOOP":
            self.emu.close()
            raise ValueError(
                f"noop_max needs NOOP as the first action; {config.game}'s is "
                f"{self.emu.actions[0].name}"
            )
        self.grayscale = config.obs_type == "grayscale"
        screen = self.emu.screen_shape
        shape = screen[:2] if self.grayscale else screen
        self._buffers = (np.zeros(shape, np.uint8), np.zeros(shape, np.uint8))
        size = config.screen_size
        frame: tuple[int, ...] = (size, size) if self.grayscale else (size, size, 3)
        k = config.frame_stack
        self.observation_shape: tuple[int, ...] = frame if k == 1 else (k, *frame)
        self._stack: deque[UInt8Array] = deque(maxlen=k)
        self.lives = 0
        self.steps = 0
        self.observation: UInt8Array = np.zeros(self.observation_shape, np.uint8)

    def _grab(self, out: UInt8Array) -> None:
        if self.grayscale:
            self.emu.screen_grayscale(out)
        else:
            self.emu.screen_rgb(out)

    def _frame(self) -> UInt8Array:
        first, second = self._buffers
        if self.config.frameskip > 1:  # in place, as the wrapper pools
            np.maximum(first, second, out=first)
        size = self.config.screen_size
        resized = self._cv2.resize(first, (size, size), interpolation=self._cv2.INTER_AREA)
        return np.asarray(resized, dtype=np.uint8)

    def _observe(self, frame: UInt8Array, *, reset: bool) -> None:
        if reset:  # FrameStackObservation pads with the reset's observation
            self._stack.clear()
            self._stack.extend(frame for _ in range(self.config.frame_stack))
        else:
            self._stack.append(frame)
        self.observation = frame if self.config.frame_stack == 1 else np.stack(self._stack)

    def reset(self, seed: int | None, mode: int | None, difficulty: int | None) -> None:
        """``AtariPreprocessing.reset``: reset, then 1..noop_max NOOPs from ``np_random``."""
        emu = self.emu
        emu.reset(seed=seed, mode=mode, difficulty=difficulty)
        noop_max = self.config.noop_max
        noops = int(emu.np_random.integers(1, noop_max + 1)) if noop_max > 0 else 0
        for _ in range(noops):
            _, terminated, truncated = emu.step(0)
            if terminated or truncated:
                emu.reset(seed=seed, mode=mode, difficulty=difficulty)
        self.lives = emu.lives
        self._grab(self._buffers[0])
        self._buffers[1].fill(0)
        self.steps = 0
        self._observe(self._frame(), reset=True)

    def step(self, action: int) -> tuple[float, bool, bool]:
        """``AtariPreprocessing.step``: ``frame_skip`` frames, the last two screens pooled."""
        emu, config = self.emu, self.config
        total, terminated, truncated = 0.0, False, False
        skip = config.frameskip
        for t in range(skip):
            reward, terminated, truncated = emu.step(action)
            total += reward
            if config.terminal_on_life_loss:
                lives = emu.lives
                terminated = terminated or lives < self.lives
                self.lives = lives
            if terminated or truncated:
                break
            if t == skip - 2:
                self._grab(self._buffers[1])
            elif t == skip - 1:
                self._grab(self._buffers[0])
        self._observe(self._frame(), reset=False)
        self.steps += 1
        cap = config.max_episode_steps
        if cap is not None and self.steps >= cap and not terminated:
            truncated = True
        return total, terminated, truncated

    def snapshot(self) -> PreprocessingSnapshot:
        """The emulator's snapshot with the wrapper's state."""
        return PreprocessingSnapshot(
            emulator=self.emu.clone_state(),
            buffers=(self._buffers[0].copy(), self._buffers[1].copy()),
            stack=tuple(f.copy() for f in self._stack),
            lives=self.lives,
            steps=self.steps,
        )

    def restore(self, snapshot: PreprocessingSnapshot) -> None:
        """Back to ``snapshot`` (from any preprocessing emulator of the same game and options)."""
        self.emu.restore_state(snapshot.emulator)
        np.copyto(self._buffers[0], snapshot.buffers[0])
        np.copyto(self._buffers[1], snapshot.buffers[1])
        self._stack.clear()
        self._stack.extend(f.copy() for f in snapshot.stack)
        self.lives, self.steps = snapshot.lives, snapshot.steps
        last = self._stack[-1]
        self.observation = last if self.config.frame_stack == 1 else np.stack(self._stack)

    def close(self) -> None:
        """Release the emulator."""
        self.emu.close()
