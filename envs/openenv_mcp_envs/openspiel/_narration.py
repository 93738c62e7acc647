"""What a model reads of an OpenSpiel game: its title, its rules, the state and the
legal actions in words, each turn's moves, and the names of the actions legal now."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import pyspiel

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration
from openenv_mcp_envs.openspiel import _bots
from openenv_mcp_envs.openspiel._games import RULES

__all__ = ["LIST_LIMIT", "OpenSpielNarration", "OpenSpielView", "listing", "short_name"]

#: Legal actions listed in an error or an event before "... and N more".
LIST_LIMIT = 60


def short_name(action: int, name: str) -> str:
    """A name without a leading copy of its id (backgammon's ``"0 - 24/22 24/21"``)."""
    head, dash, rest = name.partition(" - ")
    return rest.strip() if dash and head == str(action) and rest.strip() else name


def listing(pairs: list[tuple[int, str]], limit: int = LIST_LIMIT) -> str:
    """``"0=x(0,0), 4=x(1,1)"``, cut after ``limit`` with how many more there are."""
    shown = ", ".join(f"{a}={short_name(a, name)}" for a, name in pairs[:limit])
    more = len(pairs) - limit
    return shown + (f", ... and {more} more (call legal_actions)" if more > 0 else "") or "none"


class _Seating(Protocol):
    """What the narration reads of the game's config (``OpenSpielConfig``)."""

    @property
    def player(self) -> int | Literal["random"]: ...

    @property
    def opponent(self) -> _bots.OpponentKind: ...

    @property
    def max_episode_steps(self) -> int | None: ...


class OpenSpielView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.openspiel.env.OpenSpielEnv`
    (named here, so this module need not import the env's, which imports it)."""

    @property
    def config(self) -> _Seating: ...

    @property
    def game(self) -> Any: ...

    @property
    def game_type(self) -> Any: ...

    @property
    def game_state(self) -> Any: ...

    @property
    def short_name(self) -> str: ...

    @property
    def num_players(self) -> int: ...

    @property
    def n_actions(self) -> int: ...

    @property
    def perfect(self) -> bool: ...

    @property
    def seat(self) -> int: ...

    @property
    def render_mode(self) -> str | None: ...

    def agent_text(self, state: Any, seat: int) -> str: ...

    def legal(self) -> list[tuple[int, str]]: ...


class OpenSpielNarration(Narration[OpenSpielView]):
    """The game's rules (``_games.RULES``), the seat and opponents, the state as the agent
    may see it, and the moves of every turn."""

    @property
    def title(self) -> str:
        return f"OpenSpiel {self.env.game_type.long_name}"

    def instructions(self) -> str:
        env = self.env
        cfg, t = env.config, env.game_type
        players = env.num_players
        seat = (
            "a seat drawn from each episode's seed (info.player says which)"
            if cfg.player == "random"
            else f"player {env.seat}"
        )
        lines = [f"You are playing {self.title} ({env.short_name}, from DeepMind's OpenSpiel)."]
        if players == 1:
            lines.append("It is a one-player game: every decision is yours.")
        else:
            lines.append(
                f"{players} players; you are {seat}. Every other seat is played by an "
                f"opponent that {_bots.OPPONENTS[cfg.opponent]}."
            )
        rules = RULES.get(env.short_name)
        if rules:
            lines.append(f"Rules: {rules}")
        params = env.game.get_parameters()
        if params:
            lines.append(
                "Game parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
            )
        if t.chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC:
            lines.append(
                "Chance events (dice, deals, new tiles) are sampled by the environment, never "
                "asked of you."
            )
        if not env.perfect:
            lines.append(
                "Information is imperfect: you see only your own observation (your cards, "
                "public actions), and opponents' hidden moves and chance outcomes are not shown."
            )
        lines += [
            f"Actions: {env.n_actions} action ids exist, but only a few are legal on each "
            "turn. Call step with a legal action's id or its name (any case). Every result "
            "lists the legal actions as 'id=name'; the legal_actions tool lists them too. An "
            "illegal action is refused and changes nothing.",
            f"Reward: your own return; the final utilities range from {env.game.min_utility():g} "
            f"to {env.game.max_utility():g}. Opponents move right after you (at a simultaneous "
            "move, with you), so each step "
            "ends on your next turn (or at the game's end) and reports what they did.",
        ]
        if cfg.max_episode_steps:
            lines.append(f"The episode is cut short after {cfg.max_episode_steps} of your moves.")
        return "\n".join(lines)

    def action_description(self) -> str:
        return (
            "A legal action of the current turn, by id (integer) or by name (as listed in "
            "info.legal_action_names or by the legal_actions tool)."
        )

    def action_name(self, action: int) -> str | None:
        """The action's name in the current state, from the agent's seat (OpenSpiel's
        ``action_to_string``); ``None`` before the first reset."""
        state = self.env.game_state
        if state is None:
            return None
        try:
            return str(state.action_to_string(self.env.seat, int(action)))
        except pyspiel.SpielError:
            return None

    def observation_text(self, observation: Any) -> str | None:
        env = self.env
        state = env.game_state
        if state is None:
            return None
        seat = env.seat
        parts = [] if env.render_mode == "rgb_array" else [env.agent_text(state, seat).rstrip()]
        if state.is_terminal():
            returns = ", ".join(f"{r:g}" for r in state.returns())
            parts.append(f"Game over; returns by player: [{returns}] (you are player {seat})")
        else:
            legal = env.legal()
            parts.append(f"Your turn (player {seat}); {len(legal)} legal actions: {listing(legal)}")
        return "\n".join(p for p in parts if p)

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        env = self.env
        events = []
        for move in result.info.get("moves", []):
            who = move["player"]
            hidden = move["action"] is None
            if who == -1:
                events.append(
                    "Chance moved (a deal or roll: your view shows what you may see of it)"
                    if hidden
                    else f"Chance: {move['name']}"
                )
            elif hidden:
                events.append(f"Player {who} moved (your view shows what you may see of it)")
            else:
                events.append(f"Player {who} played {move['name']}")
        state = env.game_state
        if state is not None and state.is_terminal():
            seat = env.seat
            mine = float(state.returns()[seat])
            others = [float(r) for i, r in enumerate(state.returns()) if i != seat]
            if env.num_players == 1:
                events.append(f"Game over with a final score of {mine:g}")
            elif others and mine > max(others):
                events.append(f"You won (your return {mine:g})")
            elif others and mine < max(others):
                events.append(f"You lost (your return {mine:g})")
            else:
                events.append(f"A draw (your return {mine:g})")
            if "final_state" in result.info:
                events.append(f"Final state: {result.info['final_state']}")
        return events
