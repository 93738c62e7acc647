"""An Atari environment on OpenEnv's own stack, for ``openenv-mcp bench --vs openenv``.

OpenEnv's Atari environment is not on PyPI (``openenv`` 0.10.0 and
``openenv-core`` 0.3.0 ship no environments: it lives in OpenEnv's repository
and as a Hugging Face Space image, neither reachable here). This stands in for
it, written against openenv-core's ``Environment`` and served by its own
``create_app``: ale-py's Pong, OpenEnv's defaults (frameskip 4, no sticky
actions, the minimal action set), and every step the observation OpenEnv's
Atari environment sends: the screen as a flat list of 100,800 integers with
its shape, the legal actions, lives, frame numbers and a PNG of the screen as
a ``data:`` URL. Like OpenEnv's, its reset takes no seed.

Run it with ``uvicorn openenv_mcp_envs.openenv.reference_atari:app`` (needs openenv-core).
"""

from __future__ import annotations

import base64
import io
from typing import Any
from uuid import uuid4

import numpy as np
from ale_py import ALEInterface, LoggerMode, roms
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from PIL import Image
from pydantic import Field

__all__ = ["AtariAction", "AtariEnvironment", "AtariObservation", "app"]

GAME = "pong"
FRAMESKIP = 4


class AtariAction(Action):  # type: ignore[misc]
    """One action, by its index in the legal actions."""

    action_id: int = Field(..., ge=0, description="Index into legal_actions.")


class AtariObservation(Observation):  # type: ignore[misc]
    """The screen (flat, with its shape), legal actions, lives and frame numbers."""

    screen: list[int] = Field(default_factory=list, description="RGB pixels, flattened.")
    screen_shape: list[int] = Field(default_factory=list)
    legal_actions: list[int] = Field(default_factory=list)
    lives: int = 0
    episode_frame_number: int = 0
    frame_number: int = 0
    screen_image: str | None = Field(default=None, description="The screen as a PNG data URL.")


class AtariEnvironment(Environment):  # type: ignore[misc]
    """ale-py's Pong behind OpenEnv's Environment interface."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self.ale = ALEInterface()
        self.ale.setLoggerMode(LoggerMode.Error)
        self.ale.setFloat("repeat_action_probability", 0.0)
        rom = roms.get_rom_path(GAME)
        assert rom is not None, f"ale-py has no ROM for {GAME}"
        self.ale.loadROM(rom)
        self.actions = self.ale.getMinimalActionSet()
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self) -> AtariObservation:
        self.ale.reset_game()
        self._state = State(episode_id=str(uuid4()), step_count=0)
        return self._observe(0.0)

    def step(
        self, action: AtariAction, timeout_s: float | None = None, **kwargs: Any
    ) -> AtariObservation:
        if action.action_id >= len(self.actions):
            raise ValueError(f"action_id {action.action_id}: legal 0..{len(self.actions) - 1}")
        reward = 0.0
        for _ in range(FRAMESKIP):
            reward += self.ale.act(self.actions[action.action_id])
            if self.ale.game_over():
                break
        self._state.step_count += 1
        return self._observe(reward)

    def _observe(self, reward: float) -> AtariObservation:
        screen = self.ale.getScreenRGB()
        buffer = io.BytesIO()
        Image.fromarray(screen.astype(np.uint8)).save(buffer, format="PNG")
        return AtariObservation(
            screen=screen.flatten().tolist(),
            screen_shape=list(screen.shape),
            legal_actions=list(range(len(self.actions))),
            lives=self.ale.lives(),
            episode_frame_number=self.ale.getEpisodeFrameNumber(),
            frame_number=self.ale.getFrameNumber(),
            screen_image="data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode(),
            done=self.ale.game_over(),
            reward=reward,
        )

    @property
    def state(self) -> State:
        return self._state


app = create_app(
    AtariEnvironment, AtariAction, AtariObservation, env_name="atari", max_concurrent_envs=4
)
