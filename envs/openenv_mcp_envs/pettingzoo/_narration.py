"""What a model reads of a PettingZoo game: its title and rules, the board in words, the
legal actions by id and name, and every other agent's moves."""

from __future__ import annotations

from typing import Any, Protocol

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration

__all__ = ["LIST_LIMIT", "PettingZooNarration", "PettingZooView", "listing"]

#: Legal actions listed before "... and N more".
LIST_LIMIT = 60
#: Boards longer than this are left to the frame, where there is one.
FRAME_THRESHOLD = 150


def listing(pairs: list[tuple[int, str]], limit: int = LIST_LIMIT) -> str:
    """``"0=top-left, 4=center"``, cut after ``limit`` with how many more there are."""
    shown = ", ".join(f"{a}={name}" if name != str(a) else str(a) for a, name in pairs[:limit])
    more = len(pairs) - limit
    return shown + (f", ... and {more} more (call legal_actions)" if more > 0 else "") or "none"


class _Config(Protocol):
    @property
    def max_episode_steps(self) -> int | None: ...


class _Game(Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.pettingzoo._game.PettingZooGame`."""

    title: str
    possible_agents: list[str]

    @property
    def known(self) -> Any: ...

    @property
    def parallel(self) -> bool: ...

    @property
    def perfect(self) -> bool: ...

    @property
    def resolved(self) -> Any: ...

    @property
    def over(self) -> bool: ...

    @property
    def returns(self) -> dict[str, float]: ...

    def action_space(self, agent: str) -> Any: ...

    def action_name(self, agent: str, action: int) -> str: ...

    def board_text(self, agent: str) -> str: ...

    def status(self, agent: str) -> str: ...


class PettingZooView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.pettingzoo.env.PettingZooEnv`
    (named here, so this module need not import the env's, which imports it)."""

    @property
    def config(self) -> _Config: ...

    @property
    def game(self) -> _Game: ...

    @property
    def agent(self) -> str: ...

    @property
    def render_mode(self) -> str | None: ...

    def text(self) -> str: ...

    def legal(self) -> list[tuple[int, str]]: ...


class PettingZooNarration(Narration[PettingZooView]):
    """The game's rules (``_known.py``), the agent's seat, the board and every move."""

    @property
    def title(self) -> str:
        return f"PettingZoo {self.env.game.title}"

    def instructions(self) -> str:
        env = self.env
        game, agent = env.game, env.agent
        others = [a for a in game.possible_agents if a != agent]
        lines = [f"You are playing {self.title} ({game.resolved.id}, from PettingZoo)."]
        if others:
            at_once = (
                " Every agent moves at once each turn (a simultaneous game): they choose "
                "without seeing your choice."
                if game.parallel
                else ""
            )
            lines.append(
                f"You are {agent}; {', '.join(others)} play uniformly random legal moves from "
                f"the episode's seed.{at_once}"
            )
        else:
            lines.append(f"You are {agent}, the only agent.")
        if game.known is not None:
            lines.append(f"Rules: {game.known.rules}")
        if not game.perfect:
            lines.append(
                "Information is imperfect: you see your own view only (your cards, what is public)."
            )
        n = int(game.action_space(agent).n)
        lines += [
            f"Actions: {n} action ids exist, but only some are legal on each turn. Call step "
            "with a legal action's id or its name (any case). Every result lists the legal "
            "actions as 'id=name'; the legal_actions tool lists them too. An illegal action "
            "is refused and changes nothing.",
            "Reward: your own reward, from your move and the others' moves after it; each "
            "step ends on your next turn (or at the game's end) and reports what they did.",
        ]
        if env.config.max_episode_steps:
            lines.append(f"The episode is cut short after {env.config.max_episode_steps} moves.")
        return "\n".join(lines)

    def action_description(self) -> str:
        return (
            "A legal action of the current turn, by id (integer) or by name (as listed in "
            "info.legal_action_names or by the legal_actions tool)."
        )

    def action_name(self, action: int) -> str | None:
        return self.env.game.action_name(self.env.agent, int(action))

    def observation_text(self, observation: Any) -> str | None:
        env, agent = self.env, self.env.agent
        board = env.game.board_text(agent).rstrip()
        # An answer quotes a few hundred characters of this: a long board (Go's, chess's)
        # gives way to the turn and the legal actions where the frame shows it.
        shown = env.render_mode != "rgb_array" or len(board) <= FRAME_THRESHOLD
        parts = [board] if shown else []
        parts.append(env.game.status(agent))
        legal = env.legal()
        if legal:
            parts.append(f"{len(legal)} legal actions: {listing(legal)}")
        return "\n".join(parts)

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        env = self.env
        events = []
        for move in result.info.get("moves", []):
            if move["agent"] == env.agent:
                continue
            if move["action"] is None:
                events.append(f"{move['agent']} moved (hidden from you)")
            else:
                events.append(f"{move['agent']} played {move['name']}")
        game = env.game
        if result.terminated and game.over:
            returns = game.returns
            mine = returns.get(env.agent, 0.0)
            others = [r for a, r in returns.items() if a != env.agent]
            if not others:
                events.append(f"Game over with a return of {mine:g}")
            elif mine > max(others):
                events.append(f"You won (your return {mine:+g})")
            elif mine < max(others):
                events.append(f"You lost (your return {mine:+g})")
            else:
                events.append(f"A draw (your return {mine:+g})")
        return events
