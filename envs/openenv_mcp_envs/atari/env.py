"""The Atari environment: :class:`AtariEmulator` behind the openenv-mcp contract."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, create_model

from openenv_mcp.environment import (
    Action,
    ActionSet,
    Environment,
    Resources,
    Serving,
    StepResult,
)
from openenv_mcp.errors import ArgumentError, UnsupportedOption
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.atari._emulator import AtariConfig, AtariEmulator, AtariSnapshot, list_games
from openenv_mcp_envs.atari._games import GAMES, Game
from openenv_mcp_envs.atari._narration import AtariNarration
from openenv_mcp_envs.atari._openenv import AtariModels
from openenv_mcp_envs.atari._preprocess import Preprocessing, PreprocessingSnapshot
from openenv_mcp_envs.atari._tasks import atari_tasks

#: What a client may ask for beside the observation (``extras``): what ALE wrappers read.
EXTRAS = ("screen_rgb", "screen_grayscale", "ram")


@functools.cache
def _screen_space(shape: tuple[int, ...]) -> spaces.Box:
    """One observation space per shape, shared by every episode: a Gymnasium ``Box`` of
    a 210x160x3 screen holds 400 KB of bounds, half an episode's memory again."""
    return spaces.Box(0, 255, shape, np.uint8)


class AtariInfo(BaseModel):
    """What ``info`` holds."""

    lives: int = Field(description="Lives left (0 if the game has none).")
    frame_number: int = Field(description="Frames since the ROM loaded.")
    episode_frame_number: int = Field(description="Frames this episode.")


@functools.cache
def _options(modes: tuple[int, ...], levels: tuple[int, ...]) -> type[BaseModel]:
    """The per-episode options of one game: its modes and difficulties, as ranges with
    the values in words (not integer enums: some clients' schema subsets refuse those);
    the emulator checks the value against the game's own list."""
    return create_model(
        "AtariOptions",
        __config__=ConfigDict(extra="forbid", strict=True),
        # Typed int with no default value: an option left out is not passed to reset.
        mode=(
            int,
            Field(
                None,
                ge=min(modes),
                le=max(modes),
                description=f"Game mode from this episode on; one of {list(modes)}.",
            ),
        ),
        difficulty=(
            int,
            Field(
                None,
                ge=min(levels),
                le=max(levels),
                description=f"Difficulty from this episode on; one of {list(levels)}.",
            ),
        ),
    )


class AtariEnv(Environment[AtariConfig]):
    """Any bundled Atari 2600 game with ``ALE/<Game>-v5`` semantics.

    Actions are the game's legal (minimal, or full) action set, by index or by
    ALE name. The observation is the screen (rgb or grayscale) or the RAM, or with
    ``preprocess`` the standard 84x84 (stacked) observation; the screen is also the
    frame, so every call can return it as a PNG image. ``np_random`` and the screens
    and RAM (``extras``) are served too: what Atari wrappers read.
    """

    name: ClassVar[str] = "atari"
    description: ClassVar[str] = (
        "Atari 2600 games through ale-py's bundled ROMs (ALE v5 protocol: frameskip 4, "
        "sticky actions): choose one with --game (pong, breakout, space_invaders, ...)."
    )
    Config: ClassVar[type[BaseModel]] = AtariConfig
    Info = AtariInfo
    # A step is ~0.3 ms of CPU and never blocks: inline. Measured: a server is ~115 MiB,
    # each live episode 0.76 MiB (bench --live-episodes).
    serving = Serving(inline=True, resources=Resources(cpu=1.0, memory_mib=512, episodes=512))
    narration = AtariNarration
    openenv_models = AtariModels
    extra_names = EXTRAS

    def __init__(self, config: AtariConfig) -> None:
        super().__init__(config)
        #: With ``preprocess``: the wrapper's algorithm over the emulator (else ``None``).
        self.preprocessing: Preprocessing | None = None
        try:
            if config.preprocess:
                self.preprocessing = Preprocessing(config)
                self.emu = self.preprocessing.emu
            else:
                self.emu = AtariEmulator(config)
        except ValueError as exc:  # mode/difficulty the game lacks
            raise ArgumentError(str(exc)) from None
        #: What this game is and what its actions do in it, where that is known (and checked).
        self.game: Game | None = GAMES.get(self.emu.game)
        known = self.game.actions if self.game is not None else {}
        self.actions = ActionSet(
            [
                Action(id=i, name=a.name, meaning=known.get(a.name, a.meaning))
                for i, a in enumerate(self.emu.actions)
            ]
        )
        self.action_set = self.actions
        self.action_space = spaces.Discrete(self.actions.n)
        shape = (
            self.emu.observation_shape
            if self.preprocessing is None
            else self.preprocessing.observation_shape
        )
        self.observation_space = _screen_space(shape)
        self.render_mode = "rgb_array"
        self.frame_is_observation = config.obs_type == "rgb" and self.preprocessing is None
        emu = self.emu
        self.Options = _options(tuple(emu.available_modes), tuple(emu.available_difficulties))

    @property  # type: ignore[override]
    def np_random(self) -> np.random.Generator:
        """The emulator's NumPy generator, seeded as ``ALE/<Game>-v5``'s ``np_random``."""
        return self.emu.np_random

    @np_random.setter
    def np_random(self, generator: np.random.Generator) -> None:
        self.emu.np_random = generator

    def extra(self, name: str) -> np.ndarray:
        if name == "screen_rgb":
            return self.emu.screen_rgb()
        if name == "screen_grayscale":
            return self.emu.screen_grayscale()
        if name == "ram":
            return self.emu.ram()
        return super().extra(name)

    def metadata(self) -> dict[str, Any]:
        return {
            "config": self.config.model_dump(mode="json"),
            "game": self.emu.game,
            "actions": self.actions.to_json(),
            "available_modes": list(self.emu.available_modes),
            "available_difficulties": list(self.emu.available_difficulties),
            "screen_shape": list(self.emu.screen_shape),
            "games": list_games(),
        }

    def task_set(self) -> TaskSet:
        """The game's modes and difficulties times train, validation and test seeds,
        with the human-normalized score of Atari-57 (``_tasks.py`` says the rules)."""
        emu = self.emu
        return atari_tasks(emu.game, emu.available_modes, emu.available_difficulties)

    # -- the episode ---------------------------------------------------------------

    def _info(self) -> dict[str, Any]:
        emu = self.emu
        return {
            "lives": emu.lives,
            "frame_number": emu.frame_number,
            "episode_frame_number": emu.episode_frame_number,
        }

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        opts = options or {}
        mode, difficulty = opts.get("mode"), opts.get("difficulty")
        try:
            if self.preprocessing is not None:
                self.preprocessing.reset(seed, mode, difficulty)
                return self.preprocessing.observation, self._info()
            self.emu.reset(seed=seed, mode=mode, difficulty=difficulty)
        except ValueError as exc:
            raise UnsupportedOption(str(exc)) from None
        return self.emu.observation(), self._info()

    def step(self, action: Any) -> StepResult:
        pre = self.preprocessing
        if pre is not None:
            reward, terminated, truncated = pre.step(int(action))
            return StepResult(pre.observation, reward, terminated, truncated, self._info())
        reward, terminated, truncated = self.emu.step(int(action))
        return StepResult(self.emu.observation(), reward, terminated, truncated, self._info())

    def state(self) -> dict[str, Any]:
        return {**self._info(), "mode": self.emu.mode, "difficulty": self.emu.difficulty}

    def render(self) -> np.ndarray:
        return self.emu.screen_rgb()

    def close(self) -> None:
        self.emu.close()

    def snapshot(self) -> AtariSnapshot | PreprocessingSnapshot:
        if self.preprocessing is not None:
            return self.preprocessing.snapshot()
        return self.emu.clone_state()

    def restore(self, snapshot: Any) -> None:
        if self.preprocessing is not None:
            self.preprocessing.restore(snapshot)
        else:
            self.emu.restore_state(snapshot)


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (AtariView)
    from openenv_mcp_envs.atari._narration import AtariView

    def _narrated(env: AtariEnv) -> AtariView:
        return env
