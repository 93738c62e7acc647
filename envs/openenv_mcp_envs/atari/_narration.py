"""What a model reads of an Atari game: its title, its rules, and each step's events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration

if TYPE_CHECKING:
    from openenv_mcp.environment import ActionSet
    from openenv_mcp_envs.atari._emulator import AtariConfig, AtariEmulator
    from openenv_mcp_envs.atari._games import Game


class AtariView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.atari.env.AtariEnv` (named
    here, so this module need not import the env's, which imports it)."""

    @property
    def config(self) -> AtariConfig: ...

    @property
    def emu(self) -> AtariEmulator: ...

    @property
    def game(self) -> Game | None: ...

    @property
    def actions(self) -> ActionSet: ...


class AtariNarration(Narration[AtariView]):
    """The game's own words (``_games.GAMES``) where they are known and checked."""

    @property
    def title(self) -> str:
        env = self.env
        name = env.game.title if env.game else env.emu.game.replace("_", " ").title()
        return f"Atari {name}"

    def briefing(self) -> str:
        game = self.env.game
        if game is None:
            return (
                "Your score is the reward. What each action does depends on the game: try "
                "them and watch the frame; if nothing moves, many games wait for FIRE."
            )
        return f"Goal: {game.summary} How to start: {game.start}"

    def instructions(self) -> str:
        env = self.env
        cfg, game = env.config, env.game
        lines = [f"You are playing {self.title}, an Atari 2600 game (through ale-py)."]
        if game is not None:
            lives = f" You start with {game.lives} lives." if game.lives else ""
            lines += [
                f"{game.summary}{lives}",
                f"Scoring: {game.scoring}",
                f"How to start: {game.start}",
            ]
        else:
            start_lives = env.emu.lives
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
            for a in env.actions
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
        reward, game = float(result.reward), self.env.game
        if reward and game is not None and game.points is not None:
            events.append(game.points[0] if reward > 0 else game.points[1])
        elif reward:
            events.append(f"{'Scored' if reward > 0 else 'Lost'} {abs(reward):g} points")
        lives, before = result.info.get("lives"), info_before.get("lives")
        lost = isinstance(lives, int) and isinstance(before, int) and lives < before
        if lost and lives and game is not None and game.after_life_lost:
            events.append(game.after_life_lost[0].upper() + game.after_life_lost[1:])
        return events
