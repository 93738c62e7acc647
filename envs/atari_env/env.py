"""The Atari environment: :class:`AtariEmulator` behind the openenv-mcp contract."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel

from atari_env._emulator import AtariConfig, AtariEmulator, AtariSnapshot, list_games
from atari_env._games import GAMES, Game
from openenv_mcp.environment import (
    Action,
    ActionSet,
    Environment,
    EnvTool,
    Resources,
    StepResult,
    reject_options,
)
from openenv_mcp.errors import ArgumentError, UnsupportedOption

RESET_OPTIONS = ("mode", "difficulty")


@functools.cache
def _screen_space(shape: tuple[int, ...]) -> spaces.Box:
    """One observation space per shape, shared by every episode: a Gymnasium ``Box`` of
    a 210x160x3 screen holds 400 KB of bounds, half an episode's memory again."""
    return spaces.Box(0, 255, shape, np.uint8)


class AtariEnv(Environment[AtariConfig]):
    """Any bundled Atari 2600 game with ``ALE/<Game>-v5`` semantics.

    Actions are the game's legal (minimal, or full) action set, by index or by
    ALE name. The observation is the screen (rgb or grayscale) or the RAM; the
    screen is also the frame, so every call can return it as a PNG image.
    """

    name: ClassVar[str] = "atari"
    description: ClassVar[str] = (
        "Atari 2600 games through ale-py's bundled ROMs (ALE v5 protocol: frameskip 4, "
        "sticky actions): choose one with --game (pong, breakout, space_invaders, ...)."
    )
    Config: ClassVar[type[BaseModel]] = AtariConfig
    supports_snapshots: ClassVar[bool] = True
    run_inline: ClassVar[bool] = True  # a step is ~0.3 ms of CPU and never blocks
    # Measured: a server is ~115 MiB, each live episode 0.76 MiB (bench --live-episodes).
    resources: ClassVar[Resources] = Resources(cpu=1.0, memory_mib=512, episodes=512)

    def __init__(self, config: AtariConfig) -> None:
        super().__init__(config)
        try:
            self.emu = AtariEmulator(config)
        except ValueError as exc:  # mode/difficulty the game lacks
            raise ArgumentError(str(exc)) from None
        #: What this game is and what its actions do in it, where that is known (and checked).
        self.game: Game | None = GAMES.get(self.emu.game)
        known = self.game.actions if self.game is not None else {}
        self._actions = ActionSet(
            [
                Action(id=i, name=a.name, meaning=known.get(a.name, a.meaning))
                for i, a in enumerate(self.emu.actions)
            ]
        )
        self.action_set = self._actions
        self.action_space = spaces.Discrete(self._actions.n)
        self.observation_space = _screen_space(self.emu.observation_shape)
        self.has_frame = True
        self.frame_is_observation = config.obs_type == "rgb"

    # -- description -------------------------------------------------------------

    @property
    def title(self) -> str:
        name = self.game.title if self.game else self.emu.game.replace("_", " ").title()
        return f"Atari {name}"

    def instructions(self) -> str:
        cfg, game = self.config, self.game
        lines = [f"You are playing {self.title}, an Atari 2600 game (through ale-py)."]
        if game is not None:
            lives = f" You start with {game.lives} lives." if game.lives else ""
            lines += [
                f"{game.summary}{lives}",
                f"Scoring: {game.scoring}",
                f"How to start: {game.start}",
            ]
        else:
            start_lives = self.emu.lives
            lines += [
                "Your score is the reward; the frame is the screen."
                + (f" You start with {start_lives} lives." if start_lives else ""),
                "The actions are the joystick's directions and its fire button; what each "
                "does depends on the game: try them and watch the frame. If nothing moves, "
                "many games wait for FIRE.",
            ]
        lines.append("Actions (this game's legal set; step takes the name or the number):")
        lines += [
            f"- {a.name} ({a.id}): {a.meaning}" if a.meaning else f"- {a.name} ({a.id})"
            for a in self._actions
        ]
        timing = (
            f"Each step lasts {cfg.frameskip} frames ({cfg.frameskip / 60:.2f} s of game time)."
        )
        if cfg.repeat_action_probability > 0:
            timing += (
                f" Sticky actions are on: on every frame there is a "
                f"{cfg.repeat_action_probability:.0%} chance that the game repeats your previous "
                "action instead of the new one, so control lags a little."
            )
        cap = cfg.max_episode_steps
        timing += (
            f" The episode ends at game over, or is cut short after {cap} steps."
            if cap
            else " The episode ends at game over, or after 30 minutes of game time."
        )
        lines.append(timing)
        return "\n".join(lines)

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        events: list[str] = []
        reward, game = float(result.reward), self.game
        if reward and game is not None and game.points is not None:
            events.append(game.points[0] if reward > 0 else game.points[1])
        elif reward:
            events.append(f"{'Scored' if reward > 0 else 'Lost'} {abs(reward):g} points")
        lives, before = result.info.get("lives"), info_before.get("lives")
        lost = isinstance(lives, int) and isinstance(before, int) and lives < before
        if lost and lives and game is not None and game.after_life_lost:
            events.append(game.after_life_lost[0].upper() + game.after_life_lost[1:])
        return events

    def info_schema(self) -> dict[str, Any]:
        return {
            "lives": {"type": "integer", "description": "Lives left (0 if the game has none)."},
            "frame_number": {"type": "integer", "description": "Frames since the ROM loaded."},
            "episode_frame_number": {"type": "integer", "description": "Frames this episode."},
        }

    def reset_options_schema(self) -> dict[str, Any]:
        # Ranges and the values in words, not integer enums: some clients' schema
        # subsets refuse those. reset checks the value against the game's own list.
        modes, levels = self.emu.available_modes, self.emu.available_difficulties
        return {
            "mode": {
                "type": "integer",
                "minimum": min(modes),
                "maximum": max(modes),
                "description": f"Game mode from this episode on; one of {list(modes)}.",
            },
            "difficulty": {
                "type": "integer",
                "minimum": min(levels),
                "maximum": max(levels),
                "description": f"Difficulty from this episode on; one of {list(levels)}.",
            },
        }

    def metadata(self) -> dict[str, Any]:
        return {
            "config": self.emu.config.model_dump(mode="json"),
            "game": self.emu.game,
            "actions": self._actions.to_json(),
            "available_modes": list(self.emu.available_modes),
            "available_difficulties": list(self.emu.available_difficulties),
            "screen_shape": list(self.emu.screen_shape),
            "games": list_games(),
        }

    def tools(self) -> list[EnvTool]:
        return [
            EnvTool(
                name="legal_actions",
                description=(
                    "The legal actions of this game: number, ALE name and what each does in "
                    "this game. step accepts either the number or the name."
                ),
                kind="static",
                handler=lambda env, _args: {
                    "game": env.emu.game,
                    "title": env.title,
                    "actions": [
                        {**a.model_dump(), "description": f"{a.name}: {a.meaning}"}
                        for a in env.action_set or ()
                    ],
                },
            )
        ]

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
        reject_options(self.name, options, RESET_OPTIONS)
        opts = options or {}
        for key in RESET_OPTIONS:
            if key in opts and (not isinstance(opts[key], int) or isinstance(opts[key], bool)):
                raise UnsupportedOption(
                    f"option {key!r} must be an integer, got {type(opts[key]).__name__} "
                    f"{opts[key]!r}"
                )
        try:
            self.emu.reset(seed=seed, mode=opts.get("mode"), difficulty=opts.get("difficulty"))
        except ValueError as exc:
            raise UnsupportedOption(str(exc)) from None
        return self.emu.observation(), self._info()

    def step(self, action: Any) -> StepResult:
        reward, terminated, truncated = self.emu.step(int(action))
        return StepResult(self.emu.observation(), reward, terminated, truncated, self._info())

    def state(self) -> dict[str, Any]:
        return {**self._info(), "mode": self.emu.mode, "difficulty": self.emu.difficulty}

    def render(self) -> np.ndarray:
        return self.emu.screen_rgb()

    def close(self) -> None:
        self.emu.close()

    def snapshot(self) -> AtariSnapshot:
        return self.emu.clone_state()

    def restore(self, snapshot: Any) -> None:
        self.emu.restore_state(snapshot)
