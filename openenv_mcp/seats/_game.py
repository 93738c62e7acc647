"""The contract of a game of several players, each a seat (PettingZoo's names).

An environment whose game has several players publishes one from
:meth:`openenv_mcp.Environment.seated_game` (a new game per call). The server then
serves it with seats (``serve ENV --seats``): every player a client drives, each
through a handle of its own, instead of one agent against built-in opponents.

The game is PettingZoo's AEC and Parallel APIs in one: :meth:`to_move` names the
agents that act now (one in a sequential game, several at a simultaneous node,
none once the game is over); :meth:`apply` plays one move (or one joint move) and
says every agent's reward of it; chance (dice, deals) is resolved inside
:meth:`apply` and :meth:`reset` from the seeded generators. The server never calls a
game from two threads at once (its table holds a lock).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.errors import InvalidAction, did_you_mean

__all__ = ["Move", "SeatedGame"]

#: One move as a seat may see it: who moved, the action (``None`` where it is hidden
#: from the viewer), and its name (``"(hidden)"`` where hidden).
Move = dict[str, Any]


def _brief(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


class SeatedGame(ABC):
    """One game of several players; every method from one agent's seat where it takes one.

    Subclasses set :attr:`possible_agents` and implement the abstract methods; the
    rest have defaults that fit discrete-action games.
    """

    #: Every seat's name, in the game's order (``["player_0", "player_1"]``,
    #: ``["white", "black"]``).
    possible_agents: list[str]
    #: What the game is, for people and models (``"tic-tac-toe"``).
    title: str = ""

    # -- spaces ------------------------------------------------------------------------

    @abstractmethod
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """What ``agent`` observes (the same object on every call)."""

    @abstractmethod
    def action_space(self, agent: str) -> spaces.Space[Any]:
        """What ``agent`` may do, as ids (the same object on every call)."""

    # -- the episode -------------------------------------------------------------------

    @abstractmethod
    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        """Start a new game (seeded: the same seed, the same game for the same moves)."""

    @abstractmethod
    def to_move(self) -> list[str]:
        """The agents that act now: one (a sequential game), several (a simultaneous
        node: each acts once, the move commits when all have), none once it is over."""

    @abstractmethod
    def legal(self, agent: str) -> list[tuple[int, str]]:
        """``agent``'s legal actions now as ``(id, name)``; none unless it is to move."""

    @abstractmethod
    def observe(self, agent: str) -> tuple[Any, dict[str, Any]]:
        """``agent``'s observation and info, as it may see the game: ``info["text"]``
        (the game in words, as the agent may see it) and ``info["action_mask"]`` (1 for
        each legal action id) at least."""

    @abstractmethod
    def apply(self, actions: Mapping[str, int]) -> dict[str, float]:
        """Play one move (``{agent: action}``: the one agent to move, or every agent of a
        simultaneous node) and any chance after it; every agent's reward of it.

        Actions come checked (:meth:`parse_action`), so an illegal one is a bug."""

    @abstractmethod
    def terminations(self) -> dict[str, bool]:
        """Whether each agent's game is over (won, lost, drawn)."""

    def truncations(self) -> dict[str, bool]:
        """Whether each agent's game was cut short (a move cap). Default: never."""
        return dict.fromkeys(self.possible_agents, False)

    @property
    def over(self) -> bool:
        """Whether the game is over for every agent."""
        ends, cuts = self.terminations(), self.truncations()
        return all(ends[a] or cuts[a] for a in self.possible_agents)

    # -- what seats see of each other --------------------------------------------------

    def last_moves(self, viewer: str, moves: Sequence[Mapping[str, Any]]) -> list[Move]:
        """``moves`` (``{"agent", "action", "name"}``, as played) as ``viewer`` may see
        them. Default: all of them (perfect information)."""
        return [dict(m) for m in moves]

    def action_name(self, agent: str, action: int) -> str:
        """The name of ``agent``'s ``action`` now (before it is applied)."""
        for a, name in self.legal(agent):
            if a == action:
                return name
        return str(action)

    def render(self, viewer: str | None = None) -> np.ndarray | None:
        """The game as an RGB frame, as ``viewer`` may see it (``None``: as a watcher
        sees all of it); ``None`` where the game has no picture."""
        return None

    # -- built-in players --------------------------------------------------------------

    def opponent_action(self, agent: str, rng: np.random.Generator) -> int:
        """An action of the game's built-in player for ``agent`` (seats no client
        takes). Default: a uniformly random legal action."""
        legal = self.legal(agent)
        if not legal:
            raise InvalidAction(f"{agent} has no legal action now")
        return legal[int(rng.integers(len(legal)))][0]

    # -- actions -----------------------------------------------------------------------

    def parse_action(self, agent: str, action: Any) -> int:
        """The legal action id ``action`` means (an id, or a name in any case).

        Raises:
            InvalidAction: naming what came and the legal actions.
        """
        legal = self.legal(agent)
        listing = ", ".join(f"{a}={n}" for a, n in legal) or "none"
        if self.over:
            raise InvalidAction("the game is over: there is no legal action; call reset")
        if not legal:
            raise InvalidAction(
                f"it is not {agent}'s turn ({', '.join(self.to_move()) or 'nobody'} to move)"
            )
        if isinstance(action, bool) or not isinstance(action, int | np.integer | str):
            raise InvalidAction(
                f"expected a legal action id (integer) or name (string), got "
                f"{type(action).__name__} {_brief(action)}; legal: {listing}"
            )
        ids = {a for a, _ in legal}
        if isinstance(action, int | np.integer):
            if int(action) in ids:
                return int(action)
            raise InvalidAction(f"action {int(action)} is not legal now; legal: {listing}")
        key = action.strip()
        by_name = {name.strip().lower(): a for a, name in legal}
        if key.lower() in by_name:
            return by_name[key.lower()]
        if key.lstrip("-").isascii() and key.lstrip("-").isdigit() and len(key) <= 18:
            return self.parse_action(agent, int(key))
        hint = did_you_mean(key, [n for _, n in legal])
        raise InvalidAction(f"action {_brief(action)} is not legal now.{hint} Legal: {listing}")

    # -- snapshots and the end ---------------------------------------------------------

    def snapshot(self) -> Any:
        """The whole game (generators included), for :meth:`restore`."""
        raise NotImplementedError(f"{type(self).__name__} cannot snapshot")

    def restore(self, saved: Any) -> None:
        """Go back to a :meth:`snapshot`."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore")

    def close(self) -> None:  # noqa: B027 (most games hold nothing to free)
        """Free what the game holds."""
