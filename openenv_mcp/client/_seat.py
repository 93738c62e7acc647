"""Seats: one player of a game of several, as a client drives it (``serve ENV --seats``).

A server of seats hands every player of a game a handle of its own (``reset(seats=...)``
hands them out, ``join`` takes an open one); each seat is an episode of the server, so
:class:`Seat` is an :class:`~openenv_mcp.client._session.Episode` whose calls name their
seat. Its answers are the seat's view: its observation, its reward since it was last
told, and in ``info`` the game's fields (``text``, ``action_mask``, ``legal_actions``...)
and the seat's (``seat``, ``to_move``, ``your_turn``, ``moves``, ``seat_rewards``,
``terminations``, ``truncations``).

:func:`take_seats` starts a game holding several seats (what the PettingZoo faces
do); :meth:`Seat.join` takes an open seat of a game another client started.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from openenv_mcp.client._session import Episode, Session, Transition, wire_action
from openenv_mcp.errors import ArgumentError, OpenEnvError, ResetNeeded

__all__ = ["Seat", "open_seat", "seat_outcome", "serves_seats", "take_seats"]

#: The seat fields every seat's ``info`` holds (the server's; see ``seats_wire``).
_SEAT_FIELDS = ("seat", "to_move", "terminations", "truncations")


def serves_seats(session: Session) -> bool:
    """Whether the server serves seats (``serve ENV --seats``): its reset takes ``seats``."""
    reset = session.tools.get("reset", {}).get("inputSchema", {})
    return "seats" in reset.get("properties", {}) and "join" in session.tools


def require_seats(session: Session, what: str) -> None:
    """Refuse, naming what to do, where the server serves no seats.

    Raises:
        ArgumentError: the server serves one player per episode.
    """
    if not serves_seats(session):
        name = session.server_spec.name
        raise ArgumentError(
            f"{what} needs a server of seats, but {session.description} serves {name} with one "
            f"player per episode: serve it with seats (openenv-mcp serve {name} ... --seats all)"
        )


def check_seed(seed: Any) -> int | None:
    """``seed`` as an int (numpy integers too), or ``None``.

    Raises:
        ArgumentError: not a non-negative integer.
    """
    if seed is None:
        return None
    try:
        value = int(operator.index(seed))
    except TypeError:
        raise ArgumentError(
            f"seed must be a non-negative integer, got {type(seed).__name__} {seed!r:.60}"
        ) from None
    if value < 0:
        raise ArgumentError(f"seed must be a non-negative integer, got {value}")
    return value


def seat_outcome(info: Mapping[str, Any], seat: str) -> tuple[bool, bool]:
    """``(terminated, truncated)`` of ``seat`` as a seat's ``info`` says them."""
    ends = info.get("terminations") or {}
    cuts = info.get("truncations") or {}
    return bool(ends.get(seat, False)), bool(cuts.get(seat, False))


def _seat_info(info: Mapping[str, Any]) -> None:
    missing = [k for k in _SEAT_FIELDS if k not in info]
    if missing:
        raise OpenEnvError(
            f"the server answered a seat's call without {', '.join(missing)} in its info "
            "(is it an openenv-mcp server of seats?)"
        )


class Seat(Episode):
    """One seat of a game of several players, driven through its handle.

    ::

        async with MCPEnvClient("http://host:8000/mcp") as client:
            seat = await client.seat(handle)        # a handle another client handed out
            obs, reward, terminated, truncated, info = await seat.last()
            while not (terminated or truncated):
                await seat.step(policy(obs, info["action_mask"]))
                obs, reward, terminated, truncated, info = await seat.last()

    :meth:`step` waits by default for the seat's next turn (or the game's end) and answers
    then; :meth:`last` answers the seat's view where it is to act, waiting (bounded by the
    server's turn timeout) for its turn. Rewards are PettingZoo's: ``last()``'s is the
    seat's reward since it last acted.

    Args:
        session: a connected session to a server of seats.
        handle: the seat's handle (``reset``'s ``seats``, or ``join``'s).
        name: the seat's name (``"player_1"``), where known; the first answer says it.
        table_id: the game's handle, where known.
    """

    def __init__(
        self,
        session: Session,
        handle: str | None = None,
        *,
        name: str | None = None,
        table_id: str | None = None,
    ) -> None:
        super().__init__(session)
        self._episode_id = handle
        #: The seat's name in its game (``"player_0"``, ``"white"``).
        self.name = name
        #: The game's handle (for another client's ``join``).
        self.table_id = table_id
        #: Whether the server has told this seat its game ended (its episode is over).
        self.ended = False
        #: The reward the latest answer reported that no earlier answer had.
        self.news = 0.0
        self._transition: Transition | None = None
        # The reward since the seat last acted, from its step's answer; and what views
        # since showed of the reward owed it (the server counts it told at its next step).
        self._base = 0.0
        self._seen = 0.0

    @property
    def handle(self) -> str:
        """The seat's handle.

        Raises:
            ResetNeeded: the seat has none yet.
        """
        return self.require_episode("seat")

    # -- answers -----------------------------------------------------------------------

    def absorb(
        self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]] = ()
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = super().absorb(view, images)
        _seat_info(info)
        self.name = str(info["seat"])
        # reset's and join's answers name the game; a look's info does too (its state).
        table_id = (view or {}).get("table_id", info.get("table"))
        if isinstance(table_id, str):
            self.table_id = table_id
        return obs, info

    def _started(self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]]) -> None:
        """A view at the start of a game (reset, join, or a first look)."""
        self.ended = False
        self._base = self._seen = 0.0
        self._looked(view, images)

    def _looked(self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]]) -> None:
        """A view that told the seat nothing (state, join): the reward it shows is owed."""
        obs, info = self.absorb(view, images)
        assert self.name is not None
        owed = float((info.get("seat_rewards") or {}).get(self.name, 0.0))
        self.news, self._seen = owed - self._seen, owed
        terminated, truncated = seat_outcome(info, self.name)
        self._transition = (obs, self._base + self._seen, terminated, truncated, info)

    def _stepped(self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]]) -> Transition:
        """A step's view: its reward is every reward owed since the seat was last told."""
        obs, info = self.absorb(view, images)
        assert view is not None and self.name is not None
        self.news = float(view["reward"]) - self._seen
        self._base, self._seen = self.news, 0.0
        terminated, truncated = bool(view["terminated"]), bool(view["truncated"])
        self.ended = self.ended or terminated or truncated
        self._transition = (obs, self._base, terminated, truncated, info)
        return self._transition

    # -- joining -----------------------------------------------------------------------

    @classmethod
    async def join(
        cls, session: Session, table_id: str | None = None, name: str | None = None
    ) -> Seat:
        """Take an open seat: of the game ``table_id`` (omitted: the server's oldest game
        with an open seat), the seat ``name`` (omitted: the first open one).

        Raises:
            ArgumentError: the server serves no seats, or no such seat is open.
        """
        require_seats(session, "join")
        args: dict[str, Any] = {}
        if table_id is not None:
            args["table_id"] = table_id
        if name is not None:
            args["seat"] = name
        answer = await session.call("join", args)
        view = answer.structured or {}
        handle = view.get("episode_id")
        if not isinstance(handle, str):
            raise OpenEnvError(f"join answered no seat's handle: {view!r:.200}")
        seat = cls(session, handle, name=view.get("seat"), table_id=view.get("table_id"))
        # join answers in the server's default frames: the seat's view in this session's.
        await seat.look_first()
        return seat

    async def look_first(self) -> None:
        """The seat's first view (of a seat joined, or named by its handle)."""
        args = {"seat": self.handle, "wait": False, "frames": self.session.wire_frames()}
        answer = await self._call("state", args)
        self._started(answer.structured, answer.images)

    # -- the episode -------------------------------------------------------------------

    async def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
        np_random: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Start the game again at this seat's table (every seat keeps its handle).

        Raises:
            ArgumentError: ``from_snapshot`` or ``np_random``: a game from a snapshot is a
                new table (``reset(from_snapshot=ID, seats="all")`` hands out its seats).
        """
        if from_snapshot is not None or np_random is not None:
            raise ArgumentError(
                "a seat's reset takes a seed and options only: a game from a snapshot starts "
                "at a new table, with new seats (call reset with from_snapshot and seats)"
            )
        args: dict[str, Any] = {"episode_id": self.handle, "frames": self.session.wire_frames()}
        checked = check_seed(seed)
        if checked is not None:
            args["seed"] = checked
        if options:
            args["options"] = options
        answer = await self._call("reset", args)
        self._started(answer.structured, answer.images)
        assert self._transition is not None
        return self._transition[0], self._transition[4]

    async def snapshot(self) -> str:
        """Save the seat's whole game (every seat's part of it) on the server; its id
        starts new games from here (``take_seats(..., from_snapshot=ID)``)."""
        answer = await self._call("snapshot", {"episode_id": self.handle})
        return str((answer.structured or {})["snapshot_id"])

    async def step(self, action: Any, *, wait: bool = True) -> Transition:
        """Play the seat's move (waiting, bounded, for its turn).

        Args:
            action: a legal action id, or its name.
            wait: answer at the seat's next turn or the game's end, after the other
                players' moves (the default); ``False`` answers right after the move.

        Returns:
            ``(observation, reward, terminated, truncated, info)``: the reward is the
            seat's since it last acted. On a seat whose game is over, nothing is played
            and this is the seat's final answer (its episode then ends).

        Raises:
            NotYourTurn: its turn did not come within the server's turn timeout.
            InvalidAction: the server's message names the legal actions.
        """
        args = {
            "seat": self.handle,
            "action": wire_action(action),
            "wait": bool(wait),
            "frames": self.session.wire_frames(),
        }
        answer = await self._call("step", args)
        return self._stepped(answer.structured, answer.images)

    async def state(self, *, wait: bool = False) -> tuple[Any, dict[str, Any]]:
        """The seat's view now (others may have moved since its last answer).

        Args:
            wait: first wait (bounded by the server's turn timeout) for the seat's turn
                or the game's end.
        """
        args = {"seat": self.handle, "wait": bool(wait), "frames": self.session.wire_frames()}
        answer = await self._call("state", args)
        self._looked(answer.structured, answer.images)
        assert self._transition is not None
        return self._transition[0], self._transition[4]

    async def last(self, *, wait: bool = True) -> Transition:
        """``(observation, reward, terminated, truncated, info)`` where the seat is to act:
        its latest answer where that was at its turn or the game's end, else a fresh look
        (with ``wait``, after waiting, bounded, for its turn). The reward is the seat's
        since it last acted (PettingZoo's ``last()``)."""
        known = self._transition
        if known is None or not (known[2] or known[3] or known[4].get("your_turn")):
            await self.state(wait=wait)
        assert self._transition is not None
        return self._transition

    def __repr__(self) -> str:
        return f"<Seat {self.name} {self._episode_id} of {self.session.description!r}>"


async def take_seats(
    session: Session,
    seats: str | list[str] = "all",
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    from_snapshot: str | None = None,
) -> dict[str, Seat]:
    """Start a game on a server of seats holding ``seats`` (``"all"``, or names): every
    seat taken, by name in the game's order, the first with the reset's view. With
    ``from_snapshot`` (a seat's :meth:`Seat.snapshot`), the game goes on from that
    position at a new table (a GRPO group: one game per member, from one state).

    Raises:
        ArgumentError: the server serves no seats, or refuses those seats.
    """
    require_seats(session, "taking seats")
    args: dict[str, Any] = {"seats": seats, "new_episode": True, "frames": session.wire_frames()}
    if from_snapshot is not None:
        args["from_snapshot"] = from_snapshot
    checked = check_seed(seed)
    if checked is not None:
        args["seed"] = checked
    if options:
        args["options"] = options
    answer = await session.call("reset", args)
    view = answer.structured or {}
    handles = view.get("seats")
    if not isinstance(handles, dict) or not handles:
        raise OpenEnvError(f"reset with seats answered no seats' handles: {view!r:.200}")
    table_id = view.get("table_id")
    taken = {
        str(name): Seat(session, str(handle), name=str(name), table_id=table_id)
        for name, handle in handles.items()
    }
    first = taken[str(view.get("seat"))]
    first._started(view, answer.images)
    order = list(first.info.get("seats") or taken)
    return {name: taken[name] for name in sorted(taken, key=order.index)}


async def end_of(seat: Seat, action: Any) -> None:
    """Collect a finished seat's final answer (its episode then ends on the server), where
    the server has not told it yet."""
    if seat.ended or seat.episode_id is None:
        return
    try:
        await seat.step(action, wait=False)
    except ResetNeeded:  # ended already (by another client's call for it)
        seat.ended = True


async def open_seat(
    session: Session,
    handle: str | None = None,
    *,
    table_id: str | None = None,
    join: bool = False,
    name: str | None = None,
) -> Seat:
    """One seat on ``session`` (connected here if it is not): the seat ``handle`` names,
    with its view now; or, with ``join``, an open seat taken (of the game ``table_id``,
    the seat ``name``; by default the oldest game's first open seat).

    Raises:
        ArgumentError: neither a handle nor ``join``, or both; or the server serves no
            seats.
    """
    if handle is not None and (join or table_id is not None or name is not None):
        raise ArgumentError(
            "seat(handle) names a seat already: pass a handle, or join=True with table_id "
            "and name, not both"
        )
    if handle is None and not join:
        raise ArgumentError(
            "seat() needs a seat's handle (reset's seats, or join's), or join=True to take "
            "an open seat (of table_id=..., or of the oldest game with one)"
        )
    await session.connect()
    if handle is None:
        return await Seat.join(session, table_id, name)
    if not isinstance(handle, str):
        raise ArgumentError(
            f"a seat's handle is a string (reset's seats), got {type(handle).__name__}"
        )
    require_seats(session, "seat()")
    seat = Seat(session, handle)
    await seat.look_first()
    return seat
