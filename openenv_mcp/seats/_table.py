"""One game of seats, as the server holds it: turns, simultaneous moves, built-in
opponents, what each seat has yet to be told, and the joint record of every move.

Each seat is an episode of its own (:class:`~openenv_mcp.seats._env.SeatEnv`), whose
calls run on a thread of their own; they meet here, under one lock. A seat that acts
out of turn waits on the table's condition (bounded by its call's budget) and is
never applied to another seat; a simultaneous move commits when every seat to move
has acted; seats no client drives are the game's built-in opponents, who move as
soon as it is their turn, on the thread of the move before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from openenv_mcp.errors import ArgumentError, InvalidAction, NotYourTurn, ResetNeeded
from openenv_mcp.seats._game import Move, SeatedGame

__all__ = ["Answer", "Table", "give_up", "parse_seats"]

#: Asked while a call waits for a turn: ``True`` gives the wait up, the call answering as
#: at its deadline. Set while the call runs as an MCP task (:mod:`openenv_mcp.server.jobs`):
#: its cancel stops the wait within ``GIVE_UP_LOOK`` seconds.
give_up: ContextVar[Callable[[], bool] | None] = ContextVar("openenv_mcp_give_up", default=None)
#: How often a wait that may be given up looks.
GIVE_UP_LOOK = 0.2


def parse_seats(value: str | Sequence[str] | None, agents: Sequence[str]) -> list[str]:
    """The seats ``value`` names (``"all"``, a name, names by comma or in a list) among
    ``agents``, in the game's order.

    Raises:
        ArgumentError: a name that is no seat, or none named.
    """
    if value is None or value == "all" or value == ["all"]:
        return list(agents)
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    if not names:
        raise ArgumentError(f"seats: name at least one of {list(agents)} (or 'all'), got none")
    if any(not isinstance(n, str) or not n for n in names):
        raise ArgumentError(f"seats: expected 'all' or seat names of {list(agents)}, got {value!r}")
    unknown = [n for n in names if n not in agents]
    if unknown:
        raise ArgumentError(
            f"seats: {unknown[0]!r} is not a seat of this game; its seats are "
            f"{', '.join(agents)} (or 'all')"
        )
    return [a for a in agents if a in names]


@dataclass
class Answer:
    """What one seat is told at the end of a call: its view and what happened since it
    was last told."""

    observation: Any
    info: dict[str, Any]
    #: Its reward since it was last told (PettingZoo's cumulative reward of an agent).
    reward: float
    terminated: bool
    truncated: bool


@dataclass
class _Played:
    """One move as played (every agent of a joint move), with every agent's reward."""

    actions: dict[str, int]
    names: dict[str, str]
    rewards: dict[str, float]


@dataclass
class _Seat:
    """What the table keeps of one seat."""

    #: Its episode's handle (``None``: the seat is not made yet, or a built-in plays it).
    handle: str | None = None
    #: Whether a client holds it (handed out by reset or join).
    claimed: bool = False
    #: Reward since it was last told.
    owed: float = 0.0
    #: How many moves of the record it has been told of.
    told: int = 0
    #: Whether it has been told that its game ended.
    told_end: bool = False
    #: Whether its step waits, after its move, for its next turn (set per call).
    waits: bool = True


@dataclass(eq=False)
class Table:
    """One live game and its seats.

    Args:
        id: the table's handle (what ``join`` takes).
        game: the game (the table owns it).
        clients: the seats clients drive; the others are the game's built-in players.
        turn_timeout: seconds a call may wait for its seat's turn.
    """

    id: str
    game: SeatedGame
    clients: list[str]
    turn_timeout: float = 30.0
    seats: dict[str, _Seat] = field(default_factory=dict)
    #: Every move of this game, in order (the joint record).
    record: list[_Played] = field(default_factory=list)
    #: Bumped by every reset: a call waiting across one gives up.
    generation: int = 0
    seed: int | None = None
    options: dict[str, Any] | None = None
    #: Where the moves go as they are played (a recording), if anywhere.
    on_move: Callable[[Table, _Played], None] | None = None
    #: Told of every new game (after the game's reset, before any built-in player moves).
    on_reset: Callable[[Table], None] | None = None

    def __post_init__(self) -> None:
        self.cond = threading.Condition()
        self.seats = {a: _Seat() for a in self.game.possible_agents}
        self._pending: dict[str, int] = {}
        self._rng = np.random.default_rng()
        #: Seats whose client left (their episode closed): the game cannot go on.
        self.left: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------

    def reset(self, seed: int | None, options: Mapping[str, Any] | None) -> None:
        """Start a new game on this table (built-in players move until a client's turn)."""
        with self.cond:
            self.game.reset(seed, options)
            self.generation += 1
            self.seed, self.options = seed, dict(options) if options else None
            self.record = []
            self._pending = {}
            self._rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
            for seat in self.seats.values():
                seat.owed, seat.told, seat.told_end = 0.0, 0, False
            if self.on_reset is not None:
                self.on_reset(self)
            self._play_builtins()
            self.cond.notify_all()

    def snapshot(self) -> dict[str, Any]:
        """The whole game on this table (its game, what each seat is owed and has been
        told, the moves played, the built-in players' generator), for :meth:`restore`."""
        with self.cond:
            return {
                "game": self.game.snapshot(),
                "record": [dataclasses.asdict(p) for p in self.record],
                "seats": {
                    a: {"owed": s.owed, "told": s.told, "told_end": s.told_end}
                    for a, s in self.seats.items()
                },
                "pending": dict(self._pending),
                "rng": self._rng.bit_generator.state,
                "seed": self.seed,
                "options": self.options,
            }

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Go on from a :meth:`snapshot` (of this game's kind), as a new game of this
        table: calls waiting on the last one give up. Not recorded: a game from a
        snapshot cannot be replayed from its seed."""
        with self.cond:
            self.game.restore(saved["game"])
            self.generation += 1
            self.seed, self.options = saved["seed"], saved["options"]
            self.record = [_Played(**p) for p in saved["record"]]
            for agent, seat in self.seats.items():
                told = saved["seats"][agent]
                seat.owed, seat.told, seat.told_end = told["owed"], told["told"], told["told_end"]
            self._pending = dict(saved["pending"])
            self._rng = np.random.default_rng()
            self._rng.bit_generator.state = saved["rng"]
            self.cond.notify_all()

    def leave(self, agent: str) -> None:
        """``agent``'s client is gone (its episode closed): wake the seats waiting on it."""
        with self.cond:
            self.left.add(agent)
            self.cond.notify_all()

    def _stalled(self) -> str | None:
        """Who the game waits for that left, if anyone."""
        if self.game.over:
            return None
        gone = [a for a in self.game.to_move() if a in self.left and a not in self._pending]
        return gone[0] if gone else None

    def open_seats(self) -> list[str]:
        """Seats clients drive that no client holds yet."""
        return [a for a in self.clients if not self.seats[a].claimed]

    def claim(self, agent: str | None) -> str:
        """Hand out ``agent``'s seat (``None``: the first open one).

        Raises:
            ArgumentError: the seat is taken, a built-in plays it, or none is open.
        """
        with self.cond:
            open_ = self.open_seats()
            if agent is None:
                if not open_:
                    raise ArgumentError(
                        f"table {self.id}: every seat is taken ({', '.join(self.clients)})"
                    )
                agent = open_[0]
            if agent not in self.seats:
                raise ArgumentError(
                    f"{agent!r} is not a seat of this game; its seats are {', '.join(self.seats)}"
                )
            if agent not in self.clients:
                raise ArgumentError(f"seat {agent!r} is played by the game's built-in opponent")
            if self.seats[agent].claimed:
                free = ", ".join(open_) or "none"
                raise ArgumentError(f"seat {agent!r} is taken; open seats: {free}")
            self.seats[agent].claimed = True
            return agent

    # -- turns -------------------------------------------------------------------------

    def whose_turn(self) -> str:
        """Whose turn it is, in words."""
        with self.cond:
            if self.game.over:
                return "the game is over"
            movers = [a for a in self.game.to_move() if a not in self._pending]
            return f"{' and '.join(movers) or 'nobody'} to move"

    def turn_words(self, agent: str) -> str:
        """Whose turn it is, in words for ``agent``."""
        with self.cond:
            return "your turn" if self._my_turn(agent) else self.whose_turn()

    def _my_turn(self, agent: str) -> bool:
        return agent in self.game.to_move() and agent not in self._pending

    def _wait(self, until: Callable[[], bool], deadline: float) -> bool:
        """Wait until ``until()`` (or ``deadline``, or a reset); whether it came.

        Raises:
            ResetNeeded: the game waits for a seat whose client left.
        """
        generation = self.generation
        stop = give_up.get()

        def woken() -> bool:
            moved = until() or self.generation != generation or self._stalled() is not None
            return moved or (stop is not None and stop())

        while True:
            left = max(0.0, deadline - time.monotonic())
            done = self.cond.wait_for(
                woken, timeout=left if stop is None else min(left, GIVE_UP_LOOK)
            )
            if done or left <= GIVE_UP_LOOK or stop is None:
                break
        gone = self._stalled()
        if gone is not None and not until() and self.generation == generation:
            raise ResetNeeded(
                f"{gone} left this game (its seat's episode was closed or evicted), so it "
                "cannot go on: call reset to start a new one"
            )
        return bool(until()) and self.generation == generation

    def act(self, agent: str, action: Any, deadline: float) -> None:
        """Play ``agent``'s move once it is its turn (waiting until ``deadline``); with
        its seat's ``waits``, wait after it for its next turn or the end.

        A seat whose game is over is not moved: its call is how it is told of the end
        (PettingZoo's step of a done agent).

        Raises:
            NotYourTurn: its turn did not come by ``deadline``; nothing was applied.
            InvalidAction: the action is not legal (nothing was applied).
            ResetNeeded: the table was reset while it waited.
        """
        with self.cond:
            generation = self.generation
            if not self._wait(lambda: self.game.over or self._my_turn(agent), deadline):
                if self.generation != generation:
                    raise ResetNeeded(f"table {self.id} was reset while {agent} waited")
                raise NotYourTurn(
                    f"it is not {agent}'s turn: {self.whose_turn()} (waited "
                    f"{self.turn_timeout:g}s for {agent}'s turn; nothing was applied); "
                    "call step again to wait longer, or state to look"
                )
            if self.game.over:
                return
            move = self.game.parse_action(agent, action)
            movers = self.game.to_move()
            self._pending[agent] = move
            if all(m in self._pending for m in movers):
                self._commit()
                self._play_builtins()
            self.cond.notify_all()
            if self.seats[agent].waits:  # its move stands: a partner gone is told next call
                with contextlib.suppress(ResetNeeded):
                    self._wait(lambda: self.game.over or self._my_turn(agent), deadline)

    def wait_turn(self, agent: str, deadline: float) -> bool:
        """Wait until it is ``agent``'s turn or the game is over; whether it is."""
        with self.cond:
            return self._wait(lambda: self.game.over or self._my_turn(agent), deadline)

    def _commit(self) -> None:
        """Apply the pending move (one agent's, or a whole joint move)."""
        actions, self._pending = self._pending, {}
        names = {a: self.game.action_name(a, m) for a, m in actions.items()}
        rewards = {a: float(r) for a, r in self.game.apply(actions).items()}
        for a, r in rewards.items():
            self.seats[a].owed += r
        played = _Played(dict(actions), names, rewards)
        self.record.append(played)
        if self.on_move is not None:
            self.on_move(self, played)

    def _play_builtins(self) -> None:
        """Let the built-in players move while it is their turn (their part of a joint
        move at a simultaneous node)."""
        while not self.game.over:
            movers = self.game.to_move()
            bots = [a for a in movers if a not in self.clients and a not in self._pending]
            if not bots:
                return
            for bot in bots:
                self._pending[bot] = self.game.opponent_action(bot, self._rng)
            if not all(m in self._pending for m in movers):
                return
            self._commit()

    # -- what a seat is told -----------------------------------------------------------

    def tell(self, agent: str, since: int | None = None, *, consume: bool = True) -> Answer:
        """``agent``'s view now, its reward since it was last told, and the moves since
        (``since``: the record's length when its call began, for ``info["seat_rewards"]``);
        ``consume=False`` looks without counting it as told."""
        with self.cond:
            game, seat = self.game, self.seats[agent]
            observation, info = game.observe(agent)
            played = self.record[seat.told :]
            moves: list[Move] = [
                {"agent": a, "action": m, "name": p.names[a]}
                for p in played
                for a, m in p.actions.items()
            ]
            ends, cuts = game.terminations(), game.truncations()
            start = seat.told if since is None else since
            rewards = dict.fromkeys(game.possible_agents, 0.0)
            for p in self.record[start:]:
                for a, r in p.rewards.items():
                    rewards[a] += r
            reward = seat.owed
            if consume:
                seat.owed, seat.told = 0.0, len(self.record)
                seat.told_end = bool(ends[agent] or cuts[agent])
            to_move = [] if game.over else game.to_move()
            info = {
                **info,
                "seat": agent,
                "seats": list(game.possible_agents),
                "to_move": to_move,
                "your_turn": agent in to_move and agent not in self._pending,
                "moves": game.last_moves(agent, moves),
                "seat_rewards": rewards,
                "terminations": ends,
                "truncations": cuts,
            }
            if not info["your_turn"]:
                info["action_mask"] = [0] * len(info.get("action_mask", []))
                info["legal_actions"], info["legal_action_names"] = [], []
            return Answer(observation, info, reward, bool(ends[agent]), bool(cuts[agent]))

    @property
    def moves_played(self) -> int:
        """How many moves the record holds."""
        return len(self.record)

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse an action of the wrong type at once (legality waits for the turn)."""
        if isinstance(action, bool) or not isinstance(action, int | np.integer | str):
            raise InvalidAction(
                f"expected an action id (integer) or name (string) for {agent}, got "
                f"{type(action).__name__} {action!r:.60}"
            )
